"""The ASGI application of a revision's serving process: the Agent Server API, the chat protocol routes and /ok.

No admin, no /v2, no /api/v1: the Agent Server API (agentserver/) at the root and under /api, the
chat protocol's consumers under /api/threads and the JS client's default protocol paths at the root
(config.routing puts them ahead of Django), and a health check. When SERVE_GRAPHS_TOKEN is set
(always, when the runner starts it), every request but /ok must carry it in X-Serving-Token: the
process listens on loopback, and the token keeps other local processes from bypassing the proxy's
authentication.
"""

from __future__ import annotations

import json
import os
import secrets

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deployments.serving_settings")
django_app = get_asgi_application()  # also sets Django up before the consumers are imported

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from chat.run_queue import ExecutorStarter  # noqa: E402
from config.routing import http_routes  # noqa: E402
from core.daphne_compat import disable_twisted_form_parsing  # noqa: E402
from core.heap import freeze_loaded_objects  # noqa: E402

disable_twisted_form_parsing()


async def _send_json(send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


async def ok(scope, receive, send) -> None:
    """GET /ok: the health check, naming the revision so a reused port is never mistaken for it."""
    await _send_json(send, 200, {"ok": True, "revision_id": os.environ.get("SERVE_GRAPHS_REVISION_ID")})


class RequireServingToken:
    def __init__(self, app, token: str | None):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if self.token and scope["type"] == "http" and scope.get("path") != "/ok":
            sent = dict(scope.get("headers", [])).get(b"x-serving-token", b"").decode("latin-1")
            if not secrets.compare_digest(sent, self.token):
                return await _send_json(send, 403, {"error": "permission_denied",
                                                    "message": "Requests must come through the deployment's URL."})
        return await self.app(scope, receive, send)


routes = [re_path(r"^ok/?$", ok), *http_routes(django_app, at_root_too=True), re_path(r"", django_app)]
application = RequireServingToken(
    ExecutorStarter(ProtocolTypeRouter({"http": URLRouter(routes)})),
    os.environ.get("SERVE_GRAPHS_TOKEN"),
)
# Last: what is loaded by now lives as long as the process, and full collections need not walk it again and again.
freeze_loaded_objects()

"""The ASGI application of a revision's serving process: the Agent Server API, the chat protocol routes and /ok.

No admin, no /v2, no /api/v1: the Agent Server API (agentserver/) at the root and under /api, the
chat protocol's consumers under /api/threads and the JS client's default protocol paths at the root
(chat.routing.http_routes puts them ahead of Django), and a health check; with langgraph.json's `http`
section applied around them (custom_routes.py: the project's own app, disabled route groups, CORS). When
SERVE_GRAPHS_TOKEN is set (always, when the runner starts it), every request but /ok must carry it in
X-Serving-Token: the process listens on loopback, and the token keeps other local processes from bypassing the
proxy's authentication.
"""

from __future__ import annotations

import json
import os
import secrets

import django
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deployments.serving.settings")
django.setup(set_prefix=False)  # before the consumers are imported


class SharedThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler, running every request's synchronous part (middleware, view) on one shared thread.

    Django's own handler gives each request a thread of its own, which lives, with its database connection, until
    the response ends: 50 callers waiting on runs meant 50 idle threads and SQLite connections, about 30 MiB. Here
    the views only validate, write the run and return a stream that the event loop produces (agentserver/streams.py,
    agentruntime/db_executor.py's pool for its reads), and SQLite takes one writer at a time anyway; so they share one
    thread, as `sync_to_async(thread_sensitive=True)` does outside a request context.
    """

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)


django_app = SharedThreadASGIHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agentruntime.services import ExecutorStarter  # noqa: E402
from chat.routing import http_routes  # noqa: E402
from core.asgi_routes import asgi_route  # noqa: E402
from core.daphne_compat import disable_twisted_form_parsing  # noqa: E402
from core.heap import freeze_loaded_objects  # noqa: E402
from core.protocol_errors import error_body  # noqa: E402
from deployments.serving.custom_routes import compose  # noqa: E402

disable_twisted_form_parsing()


async def _send_json(send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


class CountInFlight:
    """Counts the requests being served (all but /ok): a replaced revision is stopped once none is left
    (deployments.pipeline `_retire`), so its callers' requests and streams finish where they started."""

    count = 0

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path") == "/ok":
            return await self.app(scope, receive, send)
        CountInFlight.count += 1
        try:
            return await self.app(scope, receive, send)
        finally:
            CountInFlight.count -= 1


async def ok(scope, receive, send) -> None:
    """GET /ok: the health check, naming the revision so a reused port is never mistaken for it, and the number of
    requests in flight."""
    await _send_json(send, 200, {"ok": True, "revision_id": os.environ.get("SERVE_GRAPHS_REVISION_ID"),
                                 "in_flight": CountInFlight.count})


class RequireServingToken:
    def __init__(self, app, token: str | None):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if self.token and scope["type"] == "http" and scope.get("path") != "/ok":
            sent = dict(scope.get("headers", [])).get(b"x-serving-token", b"").decode("latin-1")
            if not secrets.compare_digest(sent, self.token):
                return await _send_json(send, 403, error_body("permission_denied",
                                                              "Requests must come through the deployment's URL."))
        return await self.app(scope, receive, send)


builtin_routes = URLRouter([asgi_route(r"^ok/?$", ok), *http_routes(django_app, at_root_too=True),
                            asgi_route(r"", django_app)])
application = CountInFlight(RequireServingToken(
    # langgraph.json's `http` section: the project's own app, disabled route groups, CORS (custom_routes.py).
    ExecutorStarter(ProtocolTypeRouter({"http": compose(builtin_routes, settings.LANGGRAPH_HTTP)})),
    os.environ.get("SERVE_GRAPHS_TOKEN"),
))
# Last: what is loaded by now lives as long as the process, and full collections need not walk it again and again.
freeze_loaded_objects()

"""ASGI entry point: Django for HTTP, with Channels routing in front of it.

`chat.routing.http_routes` (the chat protocol's SSE consumers) are matched first; everything
else goes to Django, the Agent Server API under /api included (agentserver/urls.py). Loading it fails the chat runs
that this process's predecessor left running (agentruntime.runs.execution.fail_runs_of_predecessor): Daphne imports the
application before it listens.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from core.daphne_compat import answer_oversized_request_heads, disable_twisted_form_parsing  # noqa: E402
from core.heap import freeze_loaded_objects  # noqa: E402

# Twisted would answer 400 to multipart bodies it cannot parse itself (zstd traces) before Django,
# and close the connection without an answer on a request line over 16 KiB.
disable_twisted_form_parsing()
answer_oversized_request_heads()

from django.conf import settings  # noqa: E402

if settings.SERVE_STATIC:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agentruntime.services import ExecutorStarter, fail_runs_of_predecessor  # noqa: E402
from chat.routing import http_routes  # noqa: E402
from core.asgi_routes import asgi_route  # noqa: E402
from core.sqlite import hold_database_files  # noqa: E402

# Before the server listens: a supervised process restarted under its identity ends its predecessor's runs, and an
# SQLite database is held open so that it stays readable on a full disk.
fail_runs_of_predecessor()
hold_database_files()

# The first request starts this process's run executor (unless only run_worker executes runs).
application = ExecutorStarter(ProtocolTypeRouter(
    {"http": URLRouter([*http_routes(django_asgi_app), asgi_route(r"", django_asgi_app)])}
))

# Last: what is loaded by now lives as long as the process, and full collections need not walk it again and again.
freeze_loaded_objects()

"""ASGI entry point: Django for HTTP, with Channels routing in front of it.

`config.routing.http_routes` (the chat protocol's SSE consumers) are matched first; everything
else goes to Django, the Agent Server API under /api included (agentserver/urls.py).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from core.daphne_compat import disable_twisted_form_parsing  # noqa: E402

# Twisted would answer 400 to multipart bodies it cannot parse itself (zstd traces) before Django.
disable_twisted_form_parsing()

from django.conf import settings  # noqa: E402

if settings.SERVE_STATIC:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from config.routing import http_routes  # noqa: E402

application = ProtocolTypeRouter(
    {"http": URLRouter([*http_routes(django_asgi_app), re_path(r"", django_asgi_app)])}
)

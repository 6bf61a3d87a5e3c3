"""ASGI routes served by Channels consumers rather than Django views."""

from __future__ import annotations

http_routes: list = []

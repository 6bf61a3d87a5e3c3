"""ASGI routes served by Channels consumers rather than Django views."""

from __future__ import annotations

from chat.routing import http_routes as chat_routes

http_routes: list = [*chat_routes]

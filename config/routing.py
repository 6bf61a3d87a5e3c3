"""ASGI routes served by Channels consumers rather than Django views."""

from __future__ import annotations

from django.urls import re_path

from chat.routing import THREAD_LIST_PATH, thread_list_app
from chat.routing import http_routes as chat_routes


def by_method(routes: dict, otherwise):
    """An ASGI app sending each HTTP method to its app in `routes`, and any other method to `otherwise`."""
    async def app(scope, receive, send):
        return await routes.get(scope["method"], otherwise)(scope, receive, send)

    return app


def http_routes(django_app) -> list:
    """The chat protocol's consumers, matched ahead of Django (`django_app` answers everything else).

    GET /api/threads is the examples' thread list (a consumer); POST on the same path is the Agent Server's
    `threads.create`, a Django view.
    """
    threads = by_method({"GET": thread_list_app, "HEAD": thread_list_app}, django_app)
    return [re_path(THREAD_LIST_PATH, threads), *chat_routes]

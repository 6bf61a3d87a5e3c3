"""ASGI routes served by Channels consumers rather than Django views."""

from __future__ import annotations

from django.urls import re_path

from chat.routing import (
    BAD_THREAD_STREAM_PATH,
    EXAMPLES_STREAM_PATH,
    THREAD_LIST_PATH,
    protocol_routes,
    stream_app,
    thread_list_app,
)
from chat.routing import http_routes as chat_routes


def by_method(routes: dict, otherwise):
    """An ASGI app sending each HTTP method to its app in `routes`, and any other method to `otherwise`."""
    async def app(scope, receive, send):
        return await routes.get(scope["method"], otherwise)(scope, receive, send)

    return app


def http_routes(django_app, *, at_root_too: bool = False) -> list:
    """The chat protocol's consumers, matched ahead of Django (`django_app` answers everything else).

    GET /api/threads is the examples' thread list (a consumer); POST on the same path is the Agent Server's
    `threads.create`, a Django view. POST /api/threads/{id}/stream is the examples' subscription; GET is the
    Agent Server's join of the thread's stream. `at_root_too` (a serving process, whose root is the Agent Server
    API's base, `{custom_url}`) adds the JS client's default protocol paths at the root, without the fallbacks for
    malformed thread ids: Django refuses those in the Agent Server's shape.
    """
    threads = by_method({"GET": thread_list_app, "HEAD": thread_list_app}, django_app)
    stream = by_method({"POST": stream_app}, django_app)
    return [re_path(THREAD_LIST_PATH, threads), re_path(EXAMPLES_STREAM_PATH, stream), *chat_routes,
            re_path(BAD_THREAD_STREAM_PATH, stream), *(protocol_routes("") if at_root_too else [])]

"""The chat's ASGI routes (config/routing.py puts them ahead of Django).

Only what must outlive a Django view is here: the protocol's commands, its SSE stream and the page's branch map, plus
the examples' thread list (GET /api/threads). A thread's state, history, reads, renaming and deletion, and run
cancellation, are the Agent Server API's (agentserver/), which answers the examples' calls on those paths too.
"""

from __future__ import annotations

from django.urls import re_path

from chat import consumers

# `.` and `..` are not thread ids (clients resolve them away): on the protocol's routes they, ids over 255
# characters and encoded slashes reach the fallbacks below; every other path under /api/threads falls through to
# Django, where the Agent Server API answers it in its own shape.
_THREAD = r"^{prefix}threads/(?P<thread_id>(?!\.\.?(?:/|$))[^/]{{1,255}})"
# GET only: config/routing.py sends every other method on this path to Django (POST is the Agent Server's create).
THREAD_LIST_PATH = r"^api/threads/?$"
thread_list_app = consumers.ThreadListConsumer.as_asgi()
# POST only: config/routing.py sends the other methods on these paths to Django (GET /api/threads/{id}/stream is the
# Agent Server's join of the thread's stream).
stream_app = consumers.StreamConsumer.as_asgi()
EXAMPLES_STREAM_PATH = _THREAD.format(prefix="api/") + r"/stream/?$"
# The protocol's stream with a thread id that can name no thread, refused in the protocol's shape; never a path with a
# run in it (`/threads/{id}/runs/{run_id}/stream` is the Agent Server's).
BAD_THREAD_STREAM_PATH = r"^api/threads/(?P<thread_id>(?:(?!/runs/).)+)/stream(?:/events)?/?$"


def protocol_routes(prefix: str) -> list:
    """What LangChain's JS client calls by default in protocol mode, under `prefix`: `/threads/:id/commands` and
    `/threads/:id/stream/events` (its stop button calls the Agent Server's run cancel, a Django view)."""
    thread = _THREAD.format(prefix=prefix)
    return [
        re_path(thread + r"/commands/?$", consumers.CommandsConsumer.as_asgi()),
        re_path(thread + r"/stream/events/?$", stream_app),
    ]


http_routes = [
    *protocol_routes("api/"),
    # The chat page's branch map.
    re_path(_THREAD.format(prefix="api/") + r"/branches/?$", consumers.BranchesConsumer.as_asgi()),
    # The protocol's commands with a thread id that can name no thread: its consumers refuse them in the protocol's
    # shape (chat.http.thread_id_problem), not Django with the Agent Server's.
    re_path(r"^api/threads/(?P<thread_id>(?:(?!/runs/).)+)/commands/?$", consumers.CommandsConsumer.as_asgi()),
]

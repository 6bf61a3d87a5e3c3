"""The chat's ASGI routes (config/routing.py puts them ahead of Django).

Only what must outlive a Django view is here: the protocol's commands, its SSE stream, run cancellation and the
page's branch map, plus the examples' thread list (GET /api/threads). A thread's state, history, reads, renaming and
deletion are the Agent Server API's (agentserver/), which answers the examples' calls on those paths too.
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


def protocol_routes(prefix: str) -> list:
    """What LangChain's JS client calls by default in protocol mode, under `prefix`: `/threads/:id/commands`,
    `/threads/:id/stream/events` and (its stop button) the Agent Server's run cancel."""
    thread = _THREAD.format(prefix=prefix)
    return [
        re_path(thread + r"/commands/?$", consumers.CommandsConsumer.as_asgi()),
        re_path(thread + r"/stream/events/?$", consumers.StreamConsumer.as_asgi()),
        re_path(thread + r"/runs/(?P<run_id>[^/]+)/cancel/?$", consumers.RunCancelConsumer.as_asgi()),
    ]


http_routes = [
    *protocol_routes("api/"),
    # The examples' stream path and the chat page's branch map.
    re_path(_THREAD.format(prefix="api/") + r"/stream/?$", consumers.StreamConsumer.as_asgi()),
    re_path(_THREAD.format(prefix="api/") + r"/branches/?$", consumers.BranchesConsumer.as_asgi()),
    # The protocol's own routes with a thread id that can name no thread: its consumers refuse them in the
    # protocol's shape (chat.http.thread_id_problem), not Django with the Agent Server's.
    re_path(r"^api/threads/(?P<thread_id>.+)/commands/?$", consumers.CommandsConsumer.as_asgi()),
    re_path(r"^api/threads/(?P<thread_id>.+)/stream(?:/events)?/?$", consumers.StreamConsumer.as_asgi()),
]

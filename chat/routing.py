"""The chat's ASGI routes (config/routing.py puts them ahead of Django).

Only what must outlive a Django view is here: the protocol's commands, its SSE stream and run cancellation, plus
the examples' thread list (GET /api/threads). A thread's state, history, reads and deletion are the Agent Server
API's (agentserver/), which answers the examples' calls on those paths too.
"""

from __future__ import annotations

from django.urls import re_path

from chat import consumers

_THREAD = r"^api/threads/(?P<thread_id>[^/]{1,255})"
# GET only: config/routing.py sends every other method on this path to Django (POST is the Agent Server's create).
THREAD_LIST_PATH = r"^api/threads/?$"
thread_list_app = consumers.ThreadListConsumer.as_asgi()

http_routes = [
    re_path(_THREAD + r"/commands/?$", consumers.CommandsConsumer.as_asgi()),
    re_path(_THREAD + r"/stream(?:/events)?/?$", consumers.StreamConsumer.as_asgi()),
    re_path(_THREAD + r"/runs/(?P<run_id>[^/]+)/cancel/?$", consumers.RunCancelConsumer.as_asgi()),
]

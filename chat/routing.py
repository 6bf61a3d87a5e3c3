"""The chat's ASGI routes (config/routing.py puts them ahead of Django)."""

from __future__ import annotations

from django.urls import re_path

from chat import consumers

# `.` and `..` are not thread ids (clients resolve them away); they, ids over 255 characters and unknown paths
# under /api/threads reach NoRouteConsumer, which answers in the protocol's error shape rather than Django's.
_THREAD = r"^api/threads/(?P<thread_id>(?!\.\.?(?:/|$))[^/]{1,255})"

http_routes = [
    re_path(r"^api/threads/?$", consumers.ThreadListConsumer.as_asgi()),
    re_path(_THREAD + r"/commands/?$", consumers.CommandsConsumer.as_asgi()),
    re_path(_THREAD + r"/stream(?:/events)?/?$", consumers.StreamConsumer.as_asgi()),
    re_path(_THREAD + r"/state/?$", consumers.StateConsumer.as_asgi()),
    re_path(_THREAD + r"/history/?$", consumers.HistoryConsumer.as_asgi()),
    re_path(_THREAD + r"/branches/?$", consumers.BranchesConsumer.as_asgi()),
    re_path(_THREAD + r"/runs/(?P<run_id>[^/]+)/cancel/?$", consumers.RunCancelConsumer.as_asgi()),
    re_path(_THREAD + r"/?$", consumers.ThreadConsumer.as_asgi()),
    re_path(r"^api/threads/", consumers.NoRouteConsumer.as_asgi()),
]

"""The chat's ASGI routes, which `http_routes` puts ahead of Django (config/asgi.py, deployments/serving/asgi.py).

Only what must outlive a Django view is here: the protocol's commands, its SSE stream, the page's branch map and
approvals, plus the examples' thread list (GET /api/threads). A thread's state, history, reads, renaming and
deletion, and run cancellation, are the Agent Server API's (agentserver/), which answers the examples' calls on those
paths too.
"""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack

from chat import consumers
from chat.sse_consumer import unavailable_database_answered
from core.asgi_routes import asgi_route


def consumer_app(consumer):
    """The consumer's ASGI app behind Channels' cookie, session and auth middleware: `scope["user"]` is the
    session's user (AnonymousUser without one), which agentruntime.access.authorize reads when no API key is sent."""
    return unavailable_database_answered(AuthMiddlewareStack(consumer.as_asgi()))


# `.` and `..` are not thread ids (clients resolve them away): on the protocol's routes they, ids over 255
# characters and encoded slashes reach the fallbacks below; every other path under /api/threads falls through to
# Django, where the Agent Server API answers it in its own shape.
_THREAD = r"^{prefix}threads/(?P<thread_id>(?!\.\.?(?:/|$))[^/]{{1,255}})"
# GET only: http_routes sends every other method on this path to Django (POST is the Agent Server's create).
THREAD_LIST_PATH = r"^api/threads/?$"
thread_list_app = consumer_app(consumers.ThreadListConsumer)
# POST only: http_routes sends the other methods on these paths to Django (GET /api/threads/{id}/stream is the
# Agent Server's join of the thread's stream).
stream_app = consumer_app(consumers.StreamConsumer)
commands_app = consumer_app(consumers.CommandsConsumer)
EXAMPLES_STREAM_PATH = _THREAD.format(prefix="api/") + r"/stream/?$"
# The protocol's stream with a thread id that can name no thread, refused in the protocol's shape; never a path with a
# run in it (`/threads/{id}/runs/{run_id}/stream` is the Agent Server's).
BAD_THREAD_STREAM_PATH = r"^api/threads/(?P<thread_id>(?:(?!/runs/).)+)/stream(?:/events)?/?$"


def protocol_routes(prefix: str) -> list:
    """What LangChain's JS client calls by default in protocol mode, under `prefix`: `/threads/:id/commands` and
    `/threads/:id/stream/events` (its stop button calls the Agent Server's run cancel, a Django view)."""
    thread = _THREAD.format(prefix=prefix)
    return [
        asgi_route(thread + r"/commands/?$", commands_app),
        asgi_route(thread + r"/stream/events/?$", stream_app),
    ]


consumer_routes = [
    *protocol_routes("api/"),
    # The chat page's branch map.
    asgi_route(_THREAD.format(prefix="api/") + r"/branches/?$", consumer_app(consumers.BranchesConsumer)),
    # The chat page's approvals, pending and answered.
    asgi_route(_THREAD.format(prefix="api/") + r"/approvals/?$", consumer_app(consumers.ApprovalsConsumer)),
    # The protocol's commands with a thread id that can name no thread: its consumers refuse them in the protocol's
    # shape (chat.sse_consumer.thread_id_problem), not Django with the Agent Server's.
    asgi_route(r"^api/threads/(?P<thread_id>(?:(?!/runs/).)+)/commands/?$", commands_app),
]


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
    return [asgi_route(THREAD_LIST_PATH, threads), asgi_route(EXAMPLES_STREAM_PATH, stream), *consumer_routes,
            asgi_route(BAD_THREAD_STREAM_PATH, stream), *(protocol_routes("") if at_root_too else [])]

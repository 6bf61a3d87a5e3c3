"""The base of every chat route: a Channels HTTP consumer with a body cap, the caller, and protocol error bodies.

Chat routes answer `{error, message}` (core.protocol_errors) with a status (and `/commands` its protocol envelope),
never the REST APIs' `{"detail": …}`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import parse_qs, unquote_to_bytes

from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings
from django.db import OperationalError

from agentruntime.selectors import Caller, ChatAccessError, authorize
from agentruntime.services import db_run, dumps, thread_id_segment_problem
from core import json_input
from core.exceptions import NotFound
from core.protocol_errors import error_body

T = TypeVar("T")
log = logging.getLogger("chat.sse_consumer")
JSON_HEADERS = [(b"Content-Type", b"application/json"), (b"Cache-Control", b"no-store")]
UNAVAILABLE = (503, "unavailable", "The database is unavailable right now; try again shortly.",
               [(b"Retry-After", b"5")])


class BadBody(ValueError):
    pass


class ChatConsumer(AsyncHttpConsumer):
    """Collects the body (refusing more than JSON_BODY_MAX_BYTES), then calls `respond(body)`.

    Subclasses list their `methods`; `respond` returns normally once the response is sent. A consumer that keeps
    streaming sets `self.streaming` and owns the connection until the client leaves.
    """

    methods: tuple[str, ...] = ("POST",)
    # No channel of its own: Channels would otherwise open one per request and, with Redis, keep a blocking read
    # on it for as long as the request lasts (a stream: for hours). Live delivery goes through the thread's hub.
    # (Channels' get_channel_layer answers None for it; the stubs type the alias `str` only.)
    channel_layer_alias = None  # type: ignore[assignment]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.size = 0
        self.streaming = False
        self.refused = False

    # --- request plumbing -----------------------------------------------------------------------------------
    @property
    def headers(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for raw_name, raw_value in self.scope.get("headers", []):
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            separator = "; " if name == "cookie" else ", "
            found[name] = f"{found[name]}{separator}{value}" if name in found else value
        return found

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.scope.get("query_string", b"").decode("latin-1"))

    def query_value(self, name: str) -> str:
        """The query parameter's last value ("" when it is absent)."""
        return (self.query.get(name) or [""])[-1]

    @property
    def thread_id(self) -> str:
        # URLRouter adds `url_route` to the scope; the stubs' HTTPScope does not declare it.
        return cast(dict[str, Any], self.scope)["url_route"]["kwargs"]["thread_id"]

    async def http_request(self, message):
        if self.refused:
            return
        if not self.body and self._declared_too_large():
            return await self._refuse_body()
        chunk = message.get("body", b"")
        self.size += len(chunk)
        if self.size > settings.JSON_BODY_MAX_BYTES:
            return await self._refuse_body()
        self.body.append(chunk)
        if message.get("more_body"):
            return
        if problem := thread_id_problem(self.scope):
            await self.refuse_thread_id(b"".join(self.body), problem)
        elif self.scope["method"] not in self.methods:
            await self.send_error(405, "method_not_allowed", f"Use {' or '.join(self.methods)} on this route.",
                                  extra_headers=[(b"Allow", ", ".join(self.methods).encode())])
        else:
            await self._respond_safely(b"".join(self.body))
        if not self.streaming:
            await self.disconnect()
            raise StopConsumer()

    def _declared_too_large(self) -> bool:
        try:
            return int(self.headers.get("content-length", "0")) > settings.JSON_BODY_MAX_BYTES
        except ValueError:
            return False

    async def _refuse_body(self):
        self.refused = True
        await self.send_error(413, "payload_too_large",
                              f"Request body is too large: the limit is {settings.JSON_BODY_MAX_BYTES} bytes.")
        await self.disconnect()
        raise StopConsumer()

    async def _respond_safely(self, body: bytes) -> None:
        try:
            await self.respond(body)
        except ChatAccessError as exc:
            await self.send_error(exc.status, exc.code, exc.message)
        except NotFound as exc:
            await self.send_error(404, "not_found", exc.detail)
        except BadBody as exc:
            await self.send_error(400, "invalid_argument", str(exc))
        except OperationalError as exc:
            # The database cannot be used right now (a full disk, a lost connection): say so, as the REST APIs do.
            log.warning("chat route %s %s: the database is unavailable: %s", self.scope["method"],
                        self.scope.get("path"), exc)
            if not self.streaming:
                await self.send_error(*UNAVAILABLE)
        except Exception:
            log.exception("chat route %s %s failed", self.scope["method"], self.scope.get("path"))
            if not self.streaming:
                await self.send_error(500, "internal_error", "Internal Server Error")

    async def respond(self, body: bytes) -> None:
        raise NotImplementedError

    async def refuse_thread_id(self, body: bytes, problem: str) -> None:
        """Answer a path whose thread id can name no thread (/commands answers in its envelope instead)."""
        await self.send_error(400, "invalid_argument", problem)

    # --- callers ---------------------------------------------------------------------------------------------
    async def caller(self, *, write: bool = False) -> Caller:
        """Who is calling (401/403 otherwise); for a write, also refuse a cross-site cookie request.

        The session's user is Channels' (`scope["user"]`, set by the AuthMiddlewareStack chat/routing.py puts in
        front of every chat consumer).
        """
        client = self.scope.get("client") or ("", 0)
        return await db_run(authorize, headers=self.headers, client_host=client[0] or "",
                            user=self.scope.get("user"), write=write)

    # --- responses -------------------------------------------------------------------------------------------
    async def send_json(self, status: int, payload, extra_headers: list | None = None) -> None:
        await self.send_response(status, dumps(payload), headers=JSON_HEADERS + (extra_headers or []))

    async def send_error(self, status: int, code: str, message: str, extra_headers: list | None = None) -> None:
        await send_error_response(self.send, status, code, message, extra_headers)


async def send_error_response(send, status: int, code: str, message: str, extra_headers: list | None = None) -> None:
    """Answer with the protocol's error body `{error, message}`: the one place chat routes write it."""
    await send({"type": "http.response.start", "status": status, "headers": JSON_HEADERS + (extra_headers or [])})
    await send({"type": "http.response.body", "body": dumps(error_body(code, message))})


def unavailable_database_answered(app):
    """`app` (a consumer behind Channels' session and auth middleware) with a database failure raised before its
    response began, such as the middleware's session lookup, answered 503 as ChatConsumer answers its own."""

    async def guarded(scope, receive, send):
        started = False

        async def send_tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            return await app(scope, receive, send_tracked)
        except OperationalError as exc:
            if started:
                raise
            log.warning("chat route %s %s: the database is unavailable: %s", scope["method"], scope.get("path"), exc)
            await send_error_response(send, *UNAVAILABLE)

    return guarded


def thread_id_problem(scope) -> str | None:
    """Why the thread id in this /api/threads/<id>/… path can name no thread, or None when it can.

    Read from the raw path: the ASGI path has `%2F` decoded already, which would move the rest of the id into
    the next path segment (`a%2Fstate` would reach thread `a`'s state). `.` and `..` are refused because every
    HTTP client resolves them away before sending, so such a thread could never be reached again.
    """
    raw = scope.get("raw_path") or scope.get("path", "").encode()
    prefix = b"/api/threads/"
    if not raw.startswith(prefix):
        return None
    segment = unquote_to_bytes(raw[len(prefix):].split(b"/", 1)[0]).decode("utf-8", "replace")
    return thread_id_segment_problem(segment) if segment else None


def parse_json(body: bytes, *, default=None):
    """The JSON body (`default` when empty). Raises BadBody."""
    if not body.strip():
        return default
    try:
        return json_input.loads(body)
    except json_input.JsonRefused as exc:
        raise BadBody(str(exc)) from None


def validated(body: bytes, parse: Callable[[Any], T], *, default: Any = None) -> T:
    """The JSON body as `parse` accepts it: how every consumer reads a body.

    Raises:
        BadBody: (answered 400 invalid_argument) not JSON, or refused by `parse`, whose ValueError says why.
    """
    payload = parse_json(body, default=default)
    try:
        return parse(payload)
    except ValueError as exc:
        raise BadBody(str(exc)) from None

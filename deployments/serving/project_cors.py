"""langgraph.json's `http.cors` in a revision's serving process, for every route (the project's and the built-in).

The keys and their defaults are those the Agent Server passes on to Starlette's CORS middleware: `allow_methods`
["GET"], `allow_headers` [] (the CORS-safelisted ones are always allowed), `allow_credentials` false,
`expose_headers` [], `max_age` 600, `allow_origin_regex`; `allow_origins` defaults to ["*"], the Agent Server's
CORS_ALLOW_ORIGINS default. A preflight the rules refuse answers 400 naming what was refused; a request from an
origin they do not allow gets no CORS headers (the browser then hides the answer from the page).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ALL_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
SAFELISTED_HEADERS = frozenset({"accept", "accept-language", "content-language", "content-type"})


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _vary_origin(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` with Origin added to Vary (the answer depends on the request's origin)."""
    vary = [value.decode("latin-1") for key, value in headers if key.lower() == b"vary"]
    others = [(key, value) for key, value in headers if key.lower() != b"vary"]
    return [*others, (b"vary", ", ".join([*vary, "Origin"]).encode("latin-1"))]


class CorsRules:
    def __init__(self, *, allow_origins: Iterable[str] = ("*",), allow_methods: Iterable[str] = ("GET",),
                 allow_headers: Iterable[str] = (), allow_credentials: bool = False,
                 allow_origin_regex: str | None = None, expose_headers: Iterable[str] = (), max_age: int = 600):
        self.origins = set(allow_origins)
        self.any_origin = "*" in self.origins
        self.origin_regex = re.compile(allow_origin_regex) if allow_origin_regex else None
        methods = [method.upper() for method in allow_methods]
        self.methods = ALL_METHODS if "*" in methods else tuple(methods)
        headers = {header.lower() for header in allow_headers}
        self.any_header = "*" in headers
        self.headers = SAFELISTED_HEADERS | (headers - {"*"})
        self.credentials = allow_credentials
        self.expose = ", ".join(expose_headers)
        self.max_age = max_age

    def origin_allowed(self, origin: str) -> bool:
        if self.any_origin or origin in self.origins:
            return True
        return bool(self.origin_regex and self.origin_regex.fullmatch(origin))

    def _allow_origin(self, origin: str, *, mirror: bool) -> list[tuple[bytes, bytes]]:
        """Access-Control-Allow-Origin (and Credentials): "*" for any origin, unless credentials may be sent."""
        headers = []
        if self.any_origin and not mirror:
            headers.append((b"access-control-allow-origin", b"*"))
        else:
            headers.append((b"access-control-allow-origin", origin.encode("latin-1")))
        if self.credentials:
            headers.append((b"access-control-allow-credentials", b"true"))
        return headers

    async def preflight(self, scope, send) -> None:
        """Answer an OPTIONS request carrying Access-Control-Request-Method."""
        origin = _header(scope, b"origin") or ""
        method = (_header(scope, b"access-control-request-method") or "").upper()
        requested = _header(scope, b"access-control-request-headers") or ""
        refused = []
        headers = [(b"access-control-allow-methods", ", ".join(self.methods).encode()),
                   (b"access-control-max-age", str(self.max_age).encode())]
        if self.origin_allowed(origin):
            headers += self._allow_origin(origin, mirror=self.credentials)
        else:
            refused.append("origin")
        if method not in self.methods:
            refused.append("method")
        names = {name.strip().lower() for name in requested.split(",") if name.strip()}
        if self.any_header and requested:
            headers.append((b"access-control-allow-headers", requested.encode("latin-1")))
        else:
            headers.append((b"access-control-allow-headers", ", ".join(sorted(self.headers)).encode()))
            if not names <= self.headers:
                refused.append("headers")
        body = f"Disallowed CORS {', '.join(refused)}".encode() if refused else b"OK"
        headers = _vary_origin([*headers, (b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())])
        await send({"type": "http.response.start", "status": 400 if refused else 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def response_headers(self, scope, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """An answer's headers for a request from `Origin`: the app's own CORS headers replaced by these rules'."""
        origin = _header(scope, b"origin") or ""
        kept = [(key, value) for key, value in headers if not key.lower().startswith(b"access-control-")]
        if not self.origin_allowed(origin):
            return kept
        # A request with cookies must see its own origin echoed: a browser refuses "*" with credentials.
        mirror = self.credentials or not self.any_origin or _header(scope, b"cookie") is not None
        added = self._allow_origin(origin, mirror=mirror)
        if self.expose:
            added.append((b"access-control-expose-headers", self.expose.encode("latin-1")))
        return _vary_origin(kept + added)

    def wrap(self, app):
        """`app` behind these rules: preflights answered here, CORS headers set on every other answer."""
        async def cors_app(scope, receive, send):
            if scope["type"] != "http" or _header(scope, b"origin") is None:
                return await app(scope, receive, send)
            if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method") is not None:
                return await self.preflight(scope, send)

            async def send_with_cors(message):
                if message["type"] == "http.response.start":
                    message = {**message, "headers": self.response_headers(scope, list(message.get("headers", [])))}
                await send(message)

            return await app(scope, receive, send_with_cors)

        return cors_app

"""langgraph.json's `http` section in a revision's serving process: the project's own ASGI app, the route groups it
disables, and its CORS rules, composed around the built-in routes as the Agent Server composes them.

- `http.app` (a Starlette or FastAPI app) is served ahead of the Agent Server API: its routes take precedence over
  the built-in ones of the same path and method, and its middleware wraps every route (the Agent Server's default
  "middleware_first" order). Only /ok, /docs, /openapi.json and /metrics stay the server's.
- `http.disable_*` removes a group's routes: they answer 404 unless the project's app serves the path.
- `http.cors` replaces the default CORS rules for every route (deployments/serving/project_cors.py).
- `http.mount_prefix` serves every route under the prefix; /ok stays at the root too, for the health check.

The project's routes sit behind the same authentication as the built-in ones: the deployment's proxy checks the
API key before a request reaches this process, and the process refuses what lacks the proxy's token.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from agentruntime.selectors import GraphLoadError
from agentruntime.services import import_object
from core import rest_errors
from deployments.serving.project_cors import CorsRules

log = logging.getLogger("deployments.serving")
ASGIApp = Callable[[Any, Any, Any], Awaitable[Any]]

# The paths each `disable_*` flag removes, after the leading slash and the optional /api of the examples' mount.
# Runs on a thread (and the protocol's commands and event stream, which start runs) are the runs group's; the rest
# of /threads is the threads group's, as in the Agent Server's route tables.
_RUNS_ON_THREAD = re.compile(r"^threads/[^/]+/(runs(/|$)|commands/?$|stream/events/?$)")
GROUPS: dict[str, re.Pattern] = {
    "disable_assistants": re.compile(r"^assistants(/|$)"),
    "disable_runs": re.compile(r"^runs(/|$)"),
    "disable_threads": re.compile(r"^threads(/|$)"),
    "disable_store": re.compile(r"^store(/|$)"),
    "disable_meta": re.compile(r"^(info|docs|openapi\.json|metrics)/?$"),
    "disable_ui": re.compile(r"^ui(/|$)"),
    "disable_mcp": re.compile(r"^mcp(/|$)"),
    "disable_a2a": re.compile(r"^a2a(/|$)"),
}
# Meta routes the project's app cannot shadow (the Agent Server's "unshadowable" ones); with disable_meta only /ok.
_UNSHADOWABLE = re.compile(r"^/(ok|docs|openapi\.json|metrics)/?$")
_OK = re.compile(r"^/ok/?$")


def route_path(scope) -> str:
    """The request's path below the prefix the app is mounted at (ASGI's root_path)."""
    return scope["path"].removeprefix(scope.get("root_path", "") or "") or "/"


def route_group(path: str) -> str | None:
    """The `disable_*` flag that removes `path`'s route, or None."""
    relative = path.lstrip("/")
    if relative == "api" or relative.startswith("api/"):
        relative = relative[4:]
    if _RUNS_ON_THREAD.match(relative):
        return "disable_runs"
    return next((flag for flag, pattern in GROUPS.items() if pattern.match(relative)), None)


async def send_error(send, status: int, detail: str) -> None:
    """An error answer in the Agent Server's `{"detail": …}` shape, written as ASGI messages."""
    payload = rest_errors.error_json(detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


class DisabledGroups:
    """404, in the Agent Server's shape, for the route groups langgraph.json disables."""

    def __init__(self, app: ASGIApp, disabled: set[str]):
        self.app, self.disabled = app, disabled

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and route_group(route_path(scope)) in self.disabled:
            return await send_error(send, 404, "Not Found")
        return await self.app(scope, receive, send)


def load_custom_app(spec: str):
    """The Starlette (or FastAPI) application `spec` names.

    Raises:
        GraphLoadError: it cannot be imported, or it is not a Starlette application.
    """
    _, app = import_object(spec, what="http.app")
    if not _is_starlette(app):
        raise GraphLoadError(f"http.app {spec!r} is a {type(app).__name__}, not a Starlette or FastAPI application "
                             "(app = Starlette(...) or app = FastAPI(...)).")
    return app


def _is_starlette(app) -> bool:
    try:
        from starlette.applications import Starlette
    except ImportError:  # the project's app cannot be a Starlette app without Starlette installed
        return False
    return isinstance(app, Starlette)


class LifespanStarter:
    """Runs the project's app's lifespan startup (FastAPI's lifespan, Starlette's on_startup) once, before its
    first request: Daphne sends no lifespan events."""

    def __init__(self, app: ASGIApp):
        self.app = app
        self._started: asyncio.Future | None = None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            if self._started is None:
                self._started = asyncio.get_running_loop().create_future()
                asyncio.ensure_future(self._run_lifespan(self._started))
            await asyncio.shield(self._started)
        return await self.app(scope, receive, send)

    async def _run_lifespan(self, started: asyncio.Future) -> None:
        messages: asyncio.Queue = asyncio.Queue()
        await messages.put({"type": "lifespan.startup"})

        async def send(message):
            if message["type"].startswith("lifespan.startup") and not started.done():
                if message["type"] == "lifespan.startup.failed":
                    log.error("http.app's lifespan startup failed: %s", message.get("message", ""))
                started.set_result(None)

        try:
            await self.app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, messages.get, send)
        except Exception:
            log.exception("http.app's lifespan failed")
        finally:
            if not started.done():
                started.set_result(None)


def with_custom_app(custom, builtin: ASGIApp) -> ASGIApp:
    """The project's app, with the built-in routes behind its own (its router falls through to them)."""
    from starlette.routing import Mount

    custom.router.routes.append(Mount("", app=builtin))
    return LifespanStarter(custom)


class MetaFirst:
    """/ok, /docs, /openapi.json and /metrics go to the built-in routes before the project's app sees them."""

    def __init__(self, app: ASGIApp, builtin: ASGIApp, *, meta_disabled: bool):
        self.app, self.builtin = app, builtin
        self.first = _OK if meta_disabled else _UNSHADOWABLE

    async def __call__(self, scope, receive, send):
        target = self.builtin if scope["type"] == "http" and self.first.match(route_path(scope)) else self.app
        return await target(scope, receive, send)


class PreflightOnly:
    """A CORS preflight the proxy forwarded without an API key (browsers send none) is answered by the CORS rules
    alone, never by the project's code or the API."""

    def __init__(self, app: ASGIApp, cors: CorsRules | None):
        self.app, self.cors = app, cors

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (b"x-serving-preflight", b"1") in scope.get("headers", []):
            if self.cors is None:
                return await send_error(send, 401, "Missing API key: send it in the X-Api-Key header.")
            return await self.cors.preflight(scope, send)
        return await self.app(scope, receive, send)


class MountPrefix:
    """Every route under http.mount_prefix (its own root_path, as a mounted ASGI app's), and /ok at the root."""

    def __init__(self, app: ASGIApp, builtin: ASGIApp, prefix: str):
        self.app, self.builtin, self.prefix = app, builtin, prefix

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = route_path(scope)
        if path == self.prefix or path.startswith(self.prefix + "/"):
            root_path = (scope.get("root_path", "") or "") + self.prefix
            return await self.app({**scope, "root_path": root_path}, receive, send)
        if _OK.match(path):
            return await self.builtin(scope, receive, send)
        return await send_error(send, 404, "Not Found")


def compose(builtin: ASGIApp, http: dict) -> ASGIApp:
    """The built-in routes with the `http` section of langgraph.json applied (the section as it is, when empty)."""
    disabled = {flag for flag in GROUPS if http.get(flag)}
    app: ASGIApp = DisabledGroups(builtin, disabled) if disabled else builtin
    if http.get("app"):
        app = MetaFirst(with_custom_app(load_custom_app(http["app"]), app), app,
                        meta_disabled="disable_meta" in disabled)
    if http.get("mount_prefix"):
        app = MountPrefix(app, builtin, http["mount_prefix"])
    cors = CorsRules(**http["cors"]) if http.get("cors") is not None else None
    if cors is not None:
        app = cors.wrap(app)
    return PreflightOnly(app, cors)

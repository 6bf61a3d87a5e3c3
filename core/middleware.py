"""Request-level guards that must hold for every route, DRF or not."""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.db import OperationalError
from django.http import Http404

from core.exception_handler import database_unavailable
from core.rest_errors import error_response

log = logging.getLogger("core.errors")
_CLIENT_ERRORS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)

# Routes that need more than the JSON limit declare it here; the first match wins.
ROUTE_BODY_LIMITS = [
    (re.compile(r"^/(api/v1/)?runs(/|$)"), "TRACE_BODY_MAX_BYTES"),
    (re.compile(r"^/v2/deployments/uploads/"), "DEPLOY_UPLOAD_MAX_BYTES"),
]


def body_limit_for(path: str) -> int:
    for pattern, setting_name in ROUTE_BODY_LIMITS:
        if pattern.match(path):
            return getattr(settings, setting_name)
    return settings.JSON_BODY_MAX_BYTES


def _declared_body_size(request) -> int | None:
    raw = request.META.get("CONTENT_LENGTH")
    if raw:
        try:
            return int(raw)
        except ValueError:
            return None
    # Chunked uploads carry no length; under ASGI the body is already spooled to a file.
    stream = getattr(request, "_stream", None)
    if (request.method in ("GET", "HEAD", "DELETE", "OPTIONS") or stream is None
            or not getattr(stream, "seekable", lambda: False)()):
        return None
    position = stream.tell()
    size = stream.seek(0, 2)
    stream.seek(position)
    return size


class BodyLimitMiddleware:
    """Answer 413 before any view reads a body larger than its route allows; 404 for a path with a NUL, which names
    nothing that can be stored (core/json_input.py), before any view queries a database with it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return error_response(404, "Not Found")
        size = _declared_body_size(request)
        limit = body_limit_for(request.path)
        if size is not None and size > limit:
            return error_response(413, f"Request body is too large: the limit for this route is {limit} bytes.")
        return self.get_response(request)


def _is_browser_route(path: str) -> bool:
    return path.startswith(("/admin/", "/static/", "/accounts/", "/api/docs", "/api/reference/"))


class JsonErrorPagesMiddleware:
    """Keep Django's HTML error pages (and debug tracebacks) off the API routes."""

    _messages = {404: "Not Found", 405: "Method Not Allowed", 400: "Bad Request", 403: "Forbidden"}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        is_html = response.get("Content-Type", "").startswith("text/html")
        if response.status_code in self._messages and is_html and not _is_browser_route(request.path):
            return error_response(response.status_code, self._messages[response.status_code])
        return response

    def process_exception(self, request, exception):
        # 404, 403 and 400 exceptions are answers, not crashes: Django renders them (as JSON outside
        # the browser routes, in __call__), e.g. the admin's 403 for a read-only model's add page.
        if isinstance(exception, _CLIENT_ERRORS):
            return None
        if _is_browser_route(request.path) and settings.DEBUG:
            return None
        if isinstance(exception, OperationalError):
            unavailable = database_unavailable(exception)
            log.error("503 on %s %s: %s", request.method, request.path, unavailable.detail)
            return error_response(503, unavailable.detail,
                                  headers={"Retry-After": str(unavailable.retry_after_seconds)})
        log.exception("Unhandled error on %s %s", request.method, request.path)
        return error_response(500, "Internal Server Error")

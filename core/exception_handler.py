"""The DRF exception handler: which exception becomes which REST error (the bodies are core.rest_errors').

Validation errors are 422 `{"detail": [{"loc", "msg", "type"}]}`; every other error is
`{"detail": "..."}` with its status; anything unexpected is a bare 500.
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import OperationalError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.exceptions import RequestValidationError, ServiceError, ServiceUnavailable
from core.rest_errors import api_error_response, flatten_errors, validation_error_response, validation_item

log = logging.getLogger("core.errors")


def handle_exception(exc, context) -> Response:
    if isinstance(exc, RequestValidationError):
        return validation_error_response(exc.errors)
    if isinstance(exc, drf.ValidationError):
        return validation_error_response(flatten_errors(exc.detail, ["body"]))
    if isinstance(exc, drf.ParseError):
        return validation_error_response([validation_item(["body"], str(exc.detail), "json_invalid")])
    if isinstance(exc, OperationalError):
        exc = database_unavailable(exc)
    if isinstance(exc, ServiceUnavailable):
        log.error("503 on %s %s: %s", *_request_line(context), exc.detail)
    if isinstance(exc, ServiceError):
        headers = {"Retry-After": str(exc.retry_after_seconds)} if exc.retry_after_seconds else None
        return api_error_response(exc.status_code, exc.detail, headers=headers)
    if isinstance(exc, Http404):
        return api_error_response(404, "Not Found")
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    if isinstance(exc, drf.APIException):
        return _api_exception_response(exc)
    log.exception("Unhandled error on %s %s", *_request_line(context))
    return api_error_response(500, "Internal Server Error")


def database_unavailable(exc: Exception, outcome: str = "The request could not be completed") -> ServiceUnavailable:
    """A database that cannot be used right now (full disk, lost connection, lock timeout) as a 503 to retry."""
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return ServiceUnavailable(f"{outcome} because the database is unavailable ({reason}); retry later.")


def _request_line(context) -> tuple[str, str]:
    request = context.get("request")
    return getattr(request, "method", "?"), getattr(request, "path", "?")


def _api_exception_response(exc: drf.APIException) -> Response:
    headers = {}
    # DRF sets Throttled.wait; djangorestframework-stubs leave it out.
    wait = exc.wait if isinstance(exc, drf.Throttled) else None  # type: ignore[attr-defined]
    if wait is not None:
        headers["Retry-After"] = str(max(1, int(wait + 0.999)))
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = "ApiKey"
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return api_error_response(exc.status_code, detail, headers=headers)

"""The one place where exceptions become REST error bodies.

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

log = logging.getLogger("core.errors")

# DRF's error codes, renamed where FastAPI/pydantic has a well-known name for the same thing.
_TYPE_NAMES = {"required": "missing", "invalid": "value_error", "null": "value_error", "blank": "value_error"}


def flatten_errors(errors, loc: list) -> list[dict]:
    """Turn DRF's nested serializer errors into FastAPI's flat list."""
    if isinstance(errors, dict):
        flat = []
        for key, value in errors.items():
            flat += flatten_errors(value, loc if key == "non_field_errors" else [*loc, key])
        return flat
    if isinstance(errors, list):
        if all(isinstance(item, (str, drf.ErrorDetail)) for item in errors):
            return [_error_item(item, loc) for item in errors]
        flat = []
        for index, item in enumerate(errors):
            if item:
                flat += flatten_errors(item, [*loc, index])
        return flat
    return [_error_item(errors, loc)]


def _error_item(item, loc: list) -> dict:
    code = getattr(item, "code", None) or "value_error"
    return {"loc": loc, "msg": str(item), "type": _TYPE_NAMES.get(code, code)}


def validation_response(errors: list[dict]) -> Response:
    return Response({"detail": errors}, status=422)


def handle_exception(exc, context) -> Response:
    if isinstance(exc, RequestValidationError):
        return validation_response(exc.errors)
    if isinstance(exc, drf.ValidationError):
        return validation_response(flatten_errors(exc.detail, ["body"]))
    if isinstance(exc, drf.ParseError):
        return validation_response([{"loc": ["body"], "msg": str(exc.detail), "type": "json_invalid"}])
    if isinstance(exc, OperationalError):
        exc = database_unavailable(exc)
    if isinstance(exc, ServiceUnavailable):
        log.error("503 on %s %s: %s", *_request_line(context), exc.detail)
        return Response({"detail": exc.detail}, status=503, headers={"Retry-After": str(exc.retry_after_seconds)})
    if isinstance(exc, ServiceError):
        return Response({"detail": exc.detail}, status=exc.status_code)
    if isinstance(exc, Http404):
        return Response({"detail": "Not Found"}, status=404)
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    if isinstance(exc, drf.APIException):
        return _api_exception_response(exc)
    log.exception("Unhandled error on %s %s", *_request_line(context))
    return Response({"detail": "Internal Server Error"}, status=500)


def database_unavailable(exc: Exception, outcome: str = "The request could not be completed") -> ServiceUnavailable:
    """A database that cannot be used right now (full disk, lost connection, lock timeout) as a 503 to retry."""
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return ServiceUnavailable(f"{outcome} because the database is unavailable ({reason}); retry later.")


def _request_line(context) -> tuple[str, str]:
    request = context.get("request")
    return getattr(request, "method", "?"), getattr(request, "path", "?")


def _api_exception_response(exc: drf.APIException) -> Response:
    headers = {}
    if isinstance(exc, drf.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = "ApiKey"
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return Response({"detail": detail}, status=exc.status_code, headers=headers)

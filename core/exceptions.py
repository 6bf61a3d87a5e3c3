"""Domain errors. Services raise these; `core.exception_handler` turns them into responses."""

from __future__ import annotations

from core.rest_errors import validation_item


class ServiceError(Exception):
    """An error whose message is safe to show to the caller."""

    status_code = 400
    default_detail = "Bad request."

    def __init__(self, detail: str | None = None):
        self.detail = detail or self.default_detail
        super().__init__(self.detail)


class BadRequest(ServiceError):
    status_code = 400


class PermissionDenied(ServiceError):
    status_code = 403
    default_detail = "You do not have permission to perform this action."


class NotFound(ServiceError):
    status_code = 404
    default_detail = "Not Found"


class Conflict(ServiceError):
    status_code = 409
    default_detail = "Conflict."


class TooManyRequests(ServiceError):
    """Over a rate limit (core.throttling); REST answers carry `Retry-After`."""

    status_code = 429
    default_detail = "Too many requests."

    def __init__(self, detail: str | None = None, *, retry_after_seconds: int = 1):
        super().__init__(detail)
        self.retry_after_seconds = retry_after_seconds


class PayloadTooLarge(ServiceError):
    status_code = 413
    default_detail = "Request body is too large."


class ServiceUnavailable(ServiceError):
    """The request could not be served now (e.g. the database refuses writes); the client should retry later."""

    status_code = 503
    default_detail = "The service is temporarily unavailable; retry later."
    retry_after_seconds = 5


class RequestValidationError(Exception):
    """A 422 in FastAPI's shape: `errors` is a list of {loc, msg, type}."""

    status_code = 422

    def __init__(self, errors: list[dict]):
        self.errors = errors
        super().__init__(errors)

    @classmethod
    def single(cls, loc: list, msg: str, type_: str = "value_error") -> RequestValidationError:
        return cls([validation_item(loc, msg, type_)])

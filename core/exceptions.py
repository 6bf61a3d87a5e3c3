"""Domain errors. Services raise these; `core.exception_handler` turns them into responses."""

from __future__ import annotations

from core.rest_errors import validation_item


class ServiceError(Exception):
    """An error whose message is safe to show to the caller.

    A kind of error names its HTTP status, default message and, when retrying later may succeed, its
    `Retry-After` in its class statement: `class Gone(ServiceError, status=410, detail="Gone."): ...`.
    """

    status_code = 400
    default_detail = "Bad request."
    retry_after_seconds: int | None = None

    def __init_subclass__(cls, *, status: int | None = None, detail: str | None = None,
                          retry_after: int | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.status_code = status or cls.status_code
        cls.default_detail = detail or cls.default_detail
        cls.retry_after_seconds = retry_after or cls.retry_after_seconds

    def __init__(self, detail: str | None = None, *, retry_after_seconds: int | None = None):
        self.detail = detail or self.default_detail
        self.retry_after_seconds = retry_after_seconds or self.retry_after_seconds
        super().__init__(self.detail)


# The kinds of error services raise most, by status.
class BadRequest(ServiceError, status=400): ...
class PermissionDenied(ServiceError, status=403, detail="You do not have permission to perform this action."): ...
class NotFound(ServiceError, status=404, detail="Not Found"): ...
class Conflict(ServiceError, status=409, detail="Conflict."): ...
class PayloadTooLarge(ServiceError, status=413, detail="Request body is too large."): ...


class TooManyRequests(ServiceError, status=429, detail="Too many requests.", retry_after=1):
    """Over a rate limit (core.throttling); REST answers carry `Retry-After`."""


class ServiceUnavailable(ServiceError, status=503, detail="The service is temporarily unavailable; retry later.",
                         retry_after=5):
    """The request could not be served now (e.g. the database refuses writes); the client should retry later."""


class RequestValidationError(Exception):
    """A 422 in FastAPI's shape: `errors` is a list of {loc, msg, type}."""

    status_code = 422

    def __init__(self, errors: list[dict]):
        self.errors = errors
        super().__init__(errors)

    @classmethod
    def single(cls, loc: list, msg: str, type_: str = "value_error") -> RequestValidationError:
        return cls([validation_item(loc, msg, type_)])

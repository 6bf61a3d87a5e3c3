"""What an S3 failure means, in words that are safe to show.

The endpoint is tenant-controlled: its error bodies, messages and even error codes are never
passed on (they would turn a blind SSRF into a read primitive and can carry anything). A failure
is mapped onto a fixed message, and a category that tells export runs whether to retry.
"""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from core.egress import EgressDenied

# The messages of the documented validation failures, word for word.
ACCESS_DENIED = "Access denied"
BUCKET_NOT_VALID = "Bucket is not valid"
UNKNOWN_KEY_ID = "Key ID you provided does not exist"
INVALID_ENDPOINT = "Invalid endpoint"
INVALID_BUCKET_NAME = ("InvalidBucketName: the endpoint rejected the bucket name in the request; S3-compatible "
                       "stores that only accept virtual-hosted requests need config_kwargs_s3.addressing_style=virtual")
BAD_SIGNATURE = "The request signature does not match: check the secret access key"
EXPIRED_TOKEN = "The session token has expired"
INVALID_TOKEN = "The session token is invalid"
WRONG_REGION = "The bucket is in another region: set config.region to the bucket's region"
CLOCK_SKEW = "The request time differs too much from the server's time (RequestTimeTooSkewed)"
NO_CREDENTIALS = "No credentials were found in the environment"
UNAVAILABLE = "The endpoint is temporarily unavailable"

# Error code -> (category, message). Categories: auth and permission and bucket errors fail an
# export run at once; transient ones are retried.
_BY_CODE = {
    "AccessDenied": ("permission", ACCESS_DENIED),
    "AllAccessDisabled": ("permission", ACCESS_DENIED),
    "AccountProblem": ("permission", ACCESS_DENIED),
    "InvalidAccessKeyId": ("auth", UNKNOWN_KEY_ID),
    "SignatureDoesNotMatch": ("auth", BAD_SIGNATURE),
    "ExpiredToken": ("auth", EXPIRED_TOKEN),
    "TokenRefreshRequired": ("auth", EXPIRED_TOKEN),
    "InvalidToken": ("auth", INVALID_TOKEN),
    "RequestTimeTooSkewed": ("auth", CLOCK_SKEW),
    "NoSuchBucket": ("bucket", BUCKET_NOT_VALID),
    "InvalidBucketState": ("bucket", BUCKET_NOT_VALID),
    "InvalidBucketName": ("bucket", INVALID_BUCKET_NAME),
    "AuthorizationHeaderMalformed": ("bucket", WRONG_REGION),
    "PermanentRedirect": ("bucket", WRONG_REGION),
    "IllegalLocationConstraintException": ("bucket", WRONG_REGION),
    "SlowDown": ("transient", UNAVAILABLE),
    "ServiceUnavailable": ("transient", UNAVAILABLE),
    "InternalError": ("transient", UNAVAILABLE),
    "RequestTimeout": ("transient", UNAVAILABLE),
    "Throttling": ("transient", UNAVAILABLE),
}


class NotS3Endpoint(Exception):
    """The endpoint answered, but not the way any S3 implementation does."""


@dataclass(frozen=True)
class StorageFailure:
    category: str  # egress | auth | permission | bucket | endpoint | transient | credentials
    message: str

    @property
    def retryable(self) -> bool:
        return self.category == "transient"


def classify(exc: BaseException) -> StorageFailure:
    """Map any exception raised by an S3 call on a destination client to a safe failure."""
    if isinstance(exc, EgressDenied):
        return StorageFailure("egress", exc.detail)
    if isinstance(exc, ClientError):
        return _classify_client_error(exc)
    if isinstance(exc, NoCredentialsError):
        return StorageFailure("credentials", NO_CREDENTIALS)
    if isinstance(exc, ParamValidationError):
        return StorageFailure("bucket", BUCKET_NOT_VALID)
    if isinstance(exc, (ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)):
        # Could be a blip during an export; during validation it is still "Invalid endpoint".
        return StorageFailure("transient", INVALID_ENDPOINT)
    if isinstance(exc, (EndpointConnectionError, BotoCoreError, NotS3Endpoint, RecursionError)):
        return StorageFailure("endpoint", INVALID_ENDPOINT)
    return StorageFailure("endpoint", INVALID_ENDPOINT)


def _classify_client_error(exc: ClientError) -> StorageFailure:
    error = exc.response.get("Error") or {}
    code = str(error.get("Code") or "")
    status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    if code in _BY_CODE:
        return StorageFailure(*_BY_CODE[code])
    if not code.isdigit():
        # An error code no S3 implementation uses for these operations: not S3, or not telling.
        if status in (403,):
            return StorageFailure("permission", ACCESS_DENIED)
        if status >= 500:
            return StorageFailure("transient", UNAVAILABLE)
        return StorageFailure("endpoint", INVALID_ENDPOINT)
    # No XML error body: HEAD answers, or something that is not S3 at all.
    if status == 403 and exc.operation_name in ("HeadObject", "DeleteObject"):
        return StorageFailure("permission", ACCESS_DENIED)
    if status in (500, 502, 503, 504):
        return StorageFailure("transient", UNAVAILABLE)
    return StorageFailure("endpoint", INVALID_ENDPOINT)

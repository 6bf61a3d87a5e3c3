"""Keep destination credentials out of log records, even with botocore logging at DEBUG.

botocore's DEBUG output prints signed request headers (`Authorization`, `X-Amz-Security-Token`),
canonical requests and raw response bodies (a SignatureDoesNotMatch body names the access key
id). LOGGING holds those loggers at WARNING; this filter is the second line: it rewrites every
record of the S3 client loggers, masking auth headers and every credential value a destination
client was built with.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict

MASK = "[redacted]"
LOGGERS = (
    "botocore", "botocore.auth", "botocore.endpoint", "botocore.parsers", "botocore.httpsession",
    "botocore.hooks", "botocore.retryhandler", "botocore.retries.standard", "botocore.awsrequest",
    "botocore.client", "botocore.credentials", "botocore.utils", "botocore.regions", "botocore.httpchecksum",
    "botocore.endpoint_provider", "botocore.signers", "urllib3.connectionpool", "urllib3.connection",
    "s3transfer", "boto3",
)
_PATTERNS = [
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:b['\"])?)[^'\"\r\n,}]+"),
    re.compile(r"(?i)(x-amz-security-token['\"]?\s*[:=]\s*['\"]?(?:b['\"])?)[^'\"\r\n,}&\s]+"),
    re.compile(r"(?i)(x-amz-credential=)[^&\s'\"]+"),
    re.compile(r"(?i)(x-amz-signature=)[^&\s'\"]+"),
    re.compile(r"(?i)(<AWSAccessKeyId>)[^<]*"),
    re.compile(r"(?i)(<StringToSign(?:Bytes)?>)[^<]*"),
    re.compile(r"(?i)(<CanonicalRequest(?:Bytes)?>)[^<]*"),
]
_MAX_REMEMBERED = 512
_lock = threading.Lock()
_secrets: OrderedDict[str, None] = OrderedDict()


def remember(*values: str | None) -> None:
    """Mask these values in every later S3 client log record (the newest 512 are kept)."""
    with _lock:
        for value in values:
            if value and len(value) >= 8:
                _secrets[value] = None
                _secrets.move_to_end(value)
        while len(_secrets) > _MAX_REMEMBERED:
            _secrets.popitem(last=False)


def redact(text: str) -> str:
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    with _lock:
        secrets = list(_secrets)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class RedactCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is dropped rather than leaked
            return False
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[1] is not None:
            # Tracebacks carry exception messages; render them now, redacted.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


_PREFIXES = ("botocore", "boto3", "s3transfer", "urllib3")


_loggers_seen = [-1]


def install() -> None:
    """Attach the filter to the S3 client loggers (idempotent; the app's ready() and the factory call it)."""
    known = logging.root.manager.loggerDict
    if len(known) == _loggers_seen[0]:
        return  # no logger was created since the last pass (loggers are never removed)
    existing = [name for name in list(known) if name.split(".")[0] in _PREFIXES]
    for name in {*LOGGERS, *existing}:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactCredentials) for f in logger.filters):
            logger.addFilter(RedactCredentials())
    _loggers_seen[0] = len(known)  # after the pass: getLogger above may have created some

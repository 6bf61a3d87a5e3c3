"""The one S3 client factory: destination validation and export uploads both build clients here.

Every client it builds:
- connects only to egress-checked addresses: the check runs when a connection is opened, on the
  final host (the bucket's host under virtual addressing), and the socket goes to the address
  that was checked, so a DNS answer that changes in between (rebinding) reaches nothing; idle
  connections are shared by the process's clients and checked again each time one is reused;
- has bounded timeouts, botocore's standard retry mode (auth and permission errors are never
  retried), no redirect following (botocore's S3 region redirector is switched off: it re-sends
  to wherever an error points and recurses on HTML servers), a capped response size;
- computes checksums only when an operation requires them (boto3 >= 1.36 defaults break many
  S3-compatible stores); `put_object` sends Content-MD5 instead, which every store accepts and
  Object Lock buckets require;
- uses the destination's credentials only, never the environment's, unless the destination has
  none and EXPORTS_ALLOW_AMBIENT_CREDENTIALS is on (self-hosted).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import botocore.session
from botocore.awsrequest import (
    AWSHTTPConnection,
    AWSHTTPConnectionPool,
    AWSHTTPSConnection,
    AWSHTTPSConnectionPool,
)
from botocore.config import Config
from botocore.exceptions import HTTPClientError
from botocore.httpsession import URLLib3Session
from botocore.utils import S3RegionRedirectorv2
from django.conf import settings
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from core import egress
from core.exceptions import BadRequest
from exports import botocore_reuse, logredact
from exports.storage_errors import NotS3Endpoint, classify

ADDRESSING_STYLES = ("auto", "virtual", "path")
US_EAST_1_ENDPOINTS = ("regional", "legacy")
PUT_EXTRA_ARGS = ("ServerSideEncryption", "SSEKMSKeyId")
TEST_FILE_BODY = b"Bulk export destination check: this file was written to test write access.\n"
# XML answers of S3 are small; this only stops a hostile endpoint from filling memory.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
MAX_RESPONSE_SECONDS = 60.0


@dataclass(frozen=True)
class S3Config:
    """A destination's `config`, as the factory understands it."""

    bucket_name: str
    prefix: str = ""
    region: str | None = None
    endpoint_url: str | None = None
    include_bucket_in_prefix: bool = True
    addressing_style: str = "auto"
    payload_signing_enabled: bool | None = None
    us_east_1_regional_endpoint: str | None = None
    put_extra_args: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, config: dict) -> S3Config:
        kwargs = config.get("config_kwargs_s3") or {}
        return cls(
            bucket_name=config["bucket_name"],
            prefix=(config.get("prefix") or "").strip("/"),
            region=config.get("region") or None,
            endpoint_url=config.get("endpoint_url") or None,
            include_bucket_in_prefix=config.get("include_bucket_in_prefix", True) is not False,
            addressing_style=kwargs.get("addressing_style") or "auto",
            payload_signing_enabled=kwargs.get("payload_signing_enabled"),
            us_east_1_regional_endpoint=kwargs.get("us_east_1_regional_endpoint"),
            put_extra_args={k: v for k, v in (config.get("s3_additional_kwargs") or {}).items()
                            if k in PUT_EXTRA_ARGS},
        )


@dataclass(frozen=True)
class S3Credentials:
    """A key pair, with a session token for temporary credentials. Never printed."""

    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, data: dict) -> S3Credentials:
        return cls(data["access_key_id"], data["secret_access_key"], data.get("session_token") or None)

    def keys(self) -> list[str]:
        """The names of the stored fields: what responses show instead of the values."""
        names = ["access_key_id", "secret_access_key"]
        return [*names, "session_token"] if self.session_token else names

    def as_dict(self) -> dict:
        data = {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}
        if self.session_token:
            data["session_token"] = self.session_token
        return data


class S3Destination:
    """A ready client bound to one destination: keys under its prefix, puts with its settings."""

    def __init__(self, client, config: S3Config):
        self.client = client
        self.config = config
        self.bucket = config.bucket_name

    def key(self, *parts: str) -> str:
        """The object key for `parts` under the destination's prefix."""
        return "/".join(p.strip("/") for p in (self.config.prefix, *parts) if p and p.strip("/"))

    def display_path(self, key: str) -> str:
        """How a written file is reported: `bucket/key`, or `key` when the endpoint names the bucket."""
        return f"{self.bucket}/{key}" if self.config.include_bucket_in_prefix else key

    def put_object(self, key: str, body: bytes, **kwargs) -> dict:
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
        return self.client.put_object(Bucket=self.bucket, Key=key, Body=body, ContentMD5=md5,
                                      **self.config.put_extra_args, **kwargs)

    def close(self) -> None:
        self.client.close()


# --- pinned connections -------------------------------------------------------------------------


class _PinnedConnectionMixin:
    """urllib3 connection whose socket goes to an address the egress guard just checked."""

    def _new_conn(self):
        timeout = self.timeout if isinstance(self.timeout, (int, float)) else None
        try:
            sock = egress.connect_checked(self._dns_host, self.port, timeout=timeout,
                                          source_address=self.source_address, socket_options=self.socket_options)
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out.") from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        return sock

    def getresponse(self):
        response = super().getresponse()
        response.stream = _capped_stream(response.stream, self.host)
        return response


def _capped_stream(stream, host: str):
    def capped(amt=2**16, decode_content=None):
        size, started = 0, time.monotonic()
        for chunk in stream(amt, decode_content=decode_content):
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES or time.monotonic() - started > MAX_RESPONSE_SECONDS:
                raise egress.EgressDenied(f"The response from {host} is too large or too slow.")
            yield chunk

    return capped


class PinnedHTTPConnection(_PinnedConnectionMixin, AWSHTTPConnection):
    pass


class PinnedHTTPSConnection(_PinnedConnectionMixin, AWSHTTPSConnection):
    pass


class _RecheckingPoolMixin:
    """Every request is checked: a new connection when it connects, an idle one when it is taken again."""

    def _get_conn(self, timeout=None):
        conn = super()._get_conn(timeout)
        if conn.sock is None:
            return conn  # not connected yet: _new_conn checks the host and pins the address
        try:
            addresses = egress.check_host(conn._dns_host)
        except egress.EgressDenied:
            conn.close()
            self._put_conn(conn)
            raise
        if _peer_address(conn.sock) not in addresses:
            # Opened for an earlier DNS answer: connect again, to an address of the current one.
            conn.close()
        return conn


def _peer_address(sock) -> str | None:
    try:
        return str(ipaddress.ip_address(sock.getpeername()[0].split("%", 1)[0]))
    except (OSError, ValueError):
        return None


class PinnedHTTPConnectionPool(_RecheckingPoolMixin, AWSHTTPConnectionPool):
    ConnectionCls = PinnedHTTPConnection


class PinnedHTTPSConnectionPool(_RecheckingPoolMixin, AWSHTTPSConnectionPool):
    ConnectionCls = PinnedHTTPSConnection


class PinnedURLLib3Session(URLLib3Session):
    """botocore's HTTP session with egress-checked, pinned connections.

    The factory shares one per process and connection settings (`_shared_session`): validations and
    exports to the same host reuse idle connections instead of opening one per client. That is safe
    because a reused connection is checked again each time it is taken (the pools above): a host
    that now resolves to a refused address is refused, and a connection to an address that is no
    longer in the host's answer is replaced.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pool_classes_by_scheme = {"http": PinnedHTTPConnectionPool, "https": PinnedHTTPSConnectionPool}
        self._manager.pool_classes_by_scheme = self._pool_classes_by_scheme

    def send(self, request):
        if self._proxy_config.proxy_url_for(request.url):
            # Through an operator's proxy the socket goes to the proxy: check the target here.
            egress.check_host(urlsplit(request.url).hostname or "")
        try:
            return super().send(request)
        except HTTPClientError as exc:
            # A refusal must not look like a transient network error (which would be retried).
            if isinstance(exc.kwargs.get("error"), egress.EgressDenied):
                raise exc.kwargs["error"] from None
            raise


class _SharedPinnedURLLib3Session(PinnedURLLib3Session):
    """The process-wide session: a client's close() leaves the shared idle connections open."""

    def close(self):
        pass

    def close_connections(self) -> None:
        super().close()


# --- the factory --------------------------------------------------------------------------------

_session_lock = threading.Lock()
_session: botocore.session.Session | None = None
# What never changes between our clients (S3's model, client class, endpoint rules): built once, see the module.
_session_parts = botocore_reuse.shared()
_http_sessions: dict[tuple, _SharedPinnedURLLib3Session] = {}


def _botocore_session() -> botocore.session.Session:
    # One session per process: loading the service models is the slow part of making a client.
    global _session
    if _session is None:
        _session = botocore.session.Session()
    return _session


def s3_client(config: S3Config | dict, credentials: S3Credentials | dict | None, *,
              require_https: bool | None = None, connect_timeout: float = 5.0, read_timeout: float = 10.0,
              max_attempts: int = 3, max_pool_connections: int = 10) -> S3Destination:
    """Build the S3 client for a destination (see the module docstring for what it guarantees).

    `max_attempts` counts every attempt (first try included). The endpoint's host is checked here
    already (a DNS lookup, no connection), and again for every request: when it opens a connection or
    reuses an idle one.
    Raises EgressDenied when the endpoint is refused and BadRequest when the destination has no
    credentials and ambient ones are not allowed.
    """
    config = config if isinstance(config, S3Config) else S3Config.from_dict(config)
    if isinstance(credentials, dict):
        credentials = S3Credentials.from_dict(credentials)
    if require_https is None:
        require_https = settings.EXPORTS_REQUIRE_HTTPS
    if config.endpoint_url:
        egress.check_url(config.endpoint_url, require_https=require_https)
    client_kwargs = _credential_kwargs(credentials)
    botocore_config = Config(
        region_name=config.region or "us-east-1",
        signature_version="s3v4",
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        max_pool_connections=max_pool_connections,
        s3=_s3_options(config),
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        ignore_configured_endpoint_urls=True,
    )
    with _session_lock, botocore_reuse.reusing(_session_parts):
        client = _botocore_session().create_client(
            "s3", endpoint_url=config.endpoint_url, config=botocore_config, **client_kwargs)
    _pin_connections(client, connect_timeout, read_timeout, max_pool_connections)
    _disable_region_redirects(client)
    if not config.include_bucket_in_prefix:
        client.meta.events.register("before-sign.s3", _drop_bucket_from_path(config))
    logredact.install()
    if credentials:
        logredact.remember(credentials.access_key_id, credentials.secret_access_key, credentials.session_token)
    return S3Destination(client, config)


def _credential_kwargs(credentials: S3Credentials | None) -> dict:
    if credentials is not None:
        return {"aws_access_key_id": credentials.access_key_id,
                "aws_secret_access_key": credentials.secret_access_key,
                "aws_session_token": credentials.session_token}
    if not settings.EXPORTS_ALLOW_AMBIENT_CREDENTIALS:
        raise BadRequest("Credentials are required: this installation does not allow environment-based "
                         "credentials (EXPORTS_ALLOW_AMBIENT_CREDENTIALS is off).")
    return {}


def _s3_options(config: S3Config) -> dict:
    # An endpoint that already names the bucket must not get it again in the host.
    style = "path" if not config.include_bucket_in_prefix else config.addressing_style
    options: dict[str, str | bool] = {"addressing_style": style}
    if config.payload_signing_enabled is not None:
        options["payload_signing_enabled"] = config.payload_signing_enabled
    if config.us_east_1_regional_endpoint:
        options["us_east_1_regional_endpoint"] = config.us_east_1_regional_endpoint
    return options


def _pin_connections(client, connect_timeout: float, read_timeout: float, max_pool_connections: int) -> None:
    endpoint = client._endpoint
    original = endpoint.http_session
    endpoint.http_session = _shared_session(original._verify, (connect_timeout, read_timeout), max_pool_connections,
                                            original._socket_options)
    original.close()


def _shared_session(verify, timeout: tuple[float, float], max_pool_connections: int,
                    socket_options) -> _SharedPinnedURLLib3Session:
    # Per process id too: a forked child must not write to its parent's sockets.
    key = (os.getpid(), verify, timeout, max_pool_connections, tuple(socket_options or ()))
    with _session_lock:
        session = _http_sessions.get(key)
        if session is None:
            session = _http_sessions[key] = _SharedPinnedURLLib3Session(
                verify=verify, timeout=timeout, max_pool_connections=max_pool_connections,
                socket_options=socket_options)
        return session


def close_idle_connections() -> None:
    """Close every idle connection the shared sessions keep (they reopen, checked, on the next request)."""
    with _session_lock:
        sessions = list(_http_sessions.values())
    for session in sessions:
        session.close_connections()


def _disable_region_redirects(client) -> None:
    events = client.meta.events
    found = False
    for handler in list(events._emitter._handlers.prefix_search("needs-retry.s3.PutObject")):
        owner = getattr(handler, "__self__", None)
        if isinstance(owner, S3RegionRedirectorv2):
            events.unregister("needs-retry.s3", owner.redirect_from_error)
            events.unregister("before-parameter-build.s3", owner.annotate_request_context)
            events.unregister("before-endpoint-resolution.s3", owner.redirect_from_cache)
            found = True
    if not found:
        raise RuntimeError("botocore's S3 region redirector was not found: check the pinned botocore version.")


def _drop_bucket_from_path(config: S3Config):
    """include_bucket_in_prefix=false: the endpoint names the bucket, so the path must not repeat it."""
    base_path = urlsplit(config.endpoint_url or "").path.rstrip("/")
    bucket_segment = f"{base_path}/{config.bucket_name}"

    def handler(request, **kwargs):
        parts = urlsplit(request.url)
        if parts.path == bucket_segment or parts.path.startswith(bucket_segment + "/"):
            path = base_path + parts.path[len(bucket_segment):]
            request.url = urlunsplit(parts._replace(path=path or "/"))

    return handler


# --- the test write -----------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteCheck:
    key: str
    verified_size: bool
    deleted: bool


def write_test_file(destination: S3Destination) -> WriteCheck:
    """Write a small file under `<prefix>/tmp/`, check its size, and delete it when allowed.

    PutObject must succeed. HeadObject (size check) and DeleteObject are optional permissions:
    without them the check is skipped, and the file is left under `tmp/`.
    """
    key = destination.key("tmp", f"destination-check-{uuid.uuid4()}.txt")
    response = destination.put_object(key, TEST_FILE_BODY, ContentType="text/plain")
    if not response.get("ETag"):
        # Every S3 implementation answers PutObject with an ETag; a plain web server does not.
        raise NotS3Endpoint()
    return WriteCheck(key=key, verified_size=_verify_size(destination, key),
                           deleted=_delete_if_allowed(destination, key))


def _verify_size(destination: S3Destination, key: str) -> bool:
    try:
        head = destination.client.head_object(Bucket=destination.bucket, Key=key)
    except Exception as exc:  # noqa: BLE001 - classified right below
        if classify(exc).category == "permission":
            return False
        raise
    if head.get("ContentLength") != len(TEST_FILE_BODY):
        raise NotS3Endpoint()
    return True


def _delete_if_allowed(destination: S3Destination, key: str) -> bool:
    try:
        destination.client.delete_object(Bucket=destination.bucket, Key=key)
    except Exception as exc:  # noqa: BLE001 - classified right below
        if classify(exc).category == "permission":
            return False
        raise
    return True

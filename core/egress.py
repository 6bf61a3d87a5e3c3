"""The one egress guard: every connection to a tenant-supplied host goes through here.

Tenant-supplied URLs (S3 endpoints, bucket hosts, OAuth token endpoints) are attacker-controlled
egress targets. The guard resolves a host, refuses it when ANY of its addresses is not a public
unicast address (loopback, private, link-local, CGNAT, metadata, multicast, reserved, the
IPv4-mapped / NAT64 / 6to4 forms of those, ...) unless an operator allowlisted it in
`EGRESS_ALLOWLIST` (or, with DEBUG on, it is loopback: a developer's MinIO on localhost:9000), and
hands back the addresses it checked. Connections then go to exactly those
addresses (pinning), so a DNS answer that changes between check and connect (rebinding) reaches
nothing: the address checked is the address connected to.

    check_host("minio.example")              -> ["203.0.113.7"]
    check_url("https://s3.example/b")         -> PinnedTarget(scheme, host, port, addresses)
    egress_http_request("POST", token_url, data={...})   # pinned, no redirects, bounded timeouts

Names go through one module resolver (`use_resolver` swaps it, for tests that need `*.localhost`
or want to simulate rebinding); the check and the connection paths both use it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings

from core.exceptions import BadRequest

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], list[str]]

MAX_URL_LENGTH = 2048
MAX_RESPONSE_BYTES = 1024 * 1024

# Cloud metadata services, named separately so the refusal says what was hit.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean ...
    "169.254.170.2",  # AWS ECS task metadata / credentials
    "169.254.170.23",  # AWS EKS pod identity agent
    "fd00:ec2::254",  # AWS IMDS over IPv6
    "fd00:ec2::23",  # AWS EKS pod identity agent over IPv6
    "100.100.100.200",  # Alibaba Cloud
    "192.0.0.192",  # Oracle Cloud
))
METADATA_NAMES = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
})

# Blocks Python's `ipaddress` classifies as global (or does not classify at all) but that are
# not ordinary public unicast space. Checked in addition to `not is_global`.
_EXTRA_BLOCKED = [(ipaddress.ip_network(net), reason) for net, reason in (
    ("100.64.0.0/10", "shared (CGNAT) address"),
    ("192.0.0.0/24", "IETF protocol address"),
    ("192.88.99.0/24", "6to4 relay address"),
    ("3fff::/20", "documentation address"),
    ("5f00::/16", "reserved address"),
)]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$")
_FORBIDDEN_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


class EgressDenied(BadRequest):
    """A connection to a tenant-supplied host was refused; the message names host and reason."""


@dataclass(frozen=True)
class PinnedTarget:
    """Where a checked URL may be connected to: only `addresses`, with `host` kept for Host/SNI."""

    scheme: str
    host: str
    port: int
    addresses: list[str]


# --- resolver ---------------------------------------------------------------------------------


def system_resolver(host: str) -> list[str]:
    """Resolve with the operating system (getaddrinfo), every address family."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    # An IPv4 or IPv6 socket address starts with the address text (only an IPv6 family on a Python built
    # without IPv6 would give a number).
    addresses = (info[4][0] for info in infos)
    return [address for address in addresses if isinstance(address, str)]


_resolver_lock = threading.Lock()
_resolver: Resolver = system_resolver


def set_resolver(func: Resolver | None) -> None:
    """Replace the resolver the guard and the connection paths use (None restores the system one)."""
    global _resolver
    with _resolver_lock:
        _resolver = func or system_resolver


@contextmanager
def use_resolver(func: Resolver) -> Iterator[None]:
    """Use `func(host) -> [address, ...]` for every resolution inside the block."""
    previous = _resolver
    set_resolver(func)
    try:
        yield
    finally:
        set_resolver(previous)


def resolve(host: str) -> list[str]:
    return list(_resolver(host))


# --- allowlist --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Allowlist:
    names: frozenset[str]
    wildcard_suffixes: tuple[str, ...]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    def allows_name(self, host: str) -> bool:
        return host in self.names or any(host.endswith(suffix) for suffix in self.wildcard_suffixes)

    def allows_address(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)


# Allowed while DEBUG is on (read per check, so a test's DEBUG applies): what a developer runs on their own machine.
# Production (DEBUG off) refuses loopback unless EGRESS_ALLOWLIST names it.
DEBUG_ALLOWLIST = ("127.0.0.0/8", "::1")


def _allowlist() -> _Allowlist:
    raw = getattr(settings, "EGRESS_ALLOWLIST", ())
    entries: list[str] = raw.split(",") if isinstance(raw, str) else list(raw)
    if settings.DEBUG:
        entries += DEBUG_ALLOWLIST
    return _parse_allowlist(tuple(e.strip().lower() for e in entries if e and e.strip()))


@lru_cache(maxsize=16)
def _parse_allowlist(entries: tuple[str, ...]) -> _Allowlist:
    names, suffixes, networks = set(), [], []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if entry.startswith("*."):
            suffixes.append(entry[1:].rstrip("."))
        else:
            names.add(entry.rstrip("."))
    return _Allowlist(frozenset(names), tuple(suffixes), tuple(networks))


# --- classification ---------------------------------------------------------------------------


def _parse_literal(host: str) -> IPAddress | None:
    """An IP literal in any form the C library accepts (`127.1`, `2130706433`, `0x7f000001`, ...)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _address(raw: str) -> IPAddress:
    # getaddrinfo may add a zone id to link-local IPv6 answers ("fe80::1%eth0").
    return ipaddress.ip_address(raw.split("%", 1)[0])


def _refusal(target: str, reason: str) -> EgressDenied:
    """The refusal of a blocked address, saying how an operator allows it (but never a metadata service)."""
    if "metadata" in reason:
        return EgressDenied(f"Refused to connect to {target}: {reason}.")
    debug = " Loopback is allowed while DEBUG is on." if "loopback" in reason else ""
    return EgressDenied(f"Refused to connect to {target}: {reason}. An operator can allow it by adding it to "
                        f"EGRESS_ALLOWLIST.{debug}")


def blocked_reason(ip: IPAddress) -> str | None:
    """Why `ip` must not be connected to, or None when it is ordinary public unicast space."""
    if ip in METADATA_ADDRESSES:
        return "cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded, form = _embedded_ipv4(ip)
        if embedded is not None:
            reason = blocked_reason(embedded)
            if reason:
                return f"{form} of a {reason}"
            if form in ("IPv4-mapped form", "NAT64 form"):
                return None  # a public IPv4 address, reached through IPv6
            # 6to4 and Teredo of a public address: the tunnel prefix itself is judged below.
    for check, reason in (
        ("is_loopback", "loopback address"),
        ("is_unspecified", "unspecified address"),
        ("is_link_local", "link-local address"),
        ("is_multicast", "multicast address"),
    ):
        if getattr(ip, check):
            return reason
    for network, reason in _EXTRA_BLOCKED:
        if ip.version == network.version and ip in network:
            return reason
    if ip.is_private:
        return "private address"
    if ip.is_reserved:
        return "reserved address"
    if not ip.is_global:
        return "non-public address"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address | None, str]:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped form"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64 form"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4 form"
    if ip.teredo is not None:
        return ip.teredo[1], "Teredo form"
    return None, ""


# --- the guard --------------------------------------------------------------------------------


def _normalise_host(host: str) -> str:
    host = (host or "").strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".").lower()


def _check_name_syntax(host: str) -> None:
    if not host.isascii():
        raise EgressDenied(f"Refused to connect to {host}: host names must be ASCII (use the punycode form).")
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise EgressDenied(f"Refused to connect to {host}: not a valid host name.")


def check_host(host: str) -> list[str]:
    """Resolve `host` and return its addresses; raise EgressDenied if any of them is off limits."""
    name = _normalise_host(host)
    if not name:
        raise EgressDenied("Refused to connect: the URL has no host.")
    allow = _allowlist()
    literal = _parse_literal(name)
    if literal is not None:
        if not allow.allows_address(literal):
            reason = blocked_reason(literal)
            if reason:
                raise _refusal(str(literal), reason)
        return [str(literal)]
    _check_name_syntax(name)
    if name in METADATA_NAMES and not allow.allows_name(name):
        raise EgressDenied(f"Refused to connect to {name}: cloud metadata host.")
    addresses = _resolve_checked(name)
    if allow.allows_name(name):
        return [str(ip) for ip in addresses]
    for ip in addresses:
        reason = None if allow.allows_address(ip) else blocked_reason(ip)
        if reason:
            raise _refusal(f"{name} ({ip})", reason)
    return [str(ip) for ip in addresses]


def _resolve_checked(name: str) -> list[IPAddress]:
    try:
        answers = resolve(name)
    except (OSError, UnicodeError):
        answers = []
    addresses: list[IPAddress] = []
    for raw in answers:
        try:
            ip = _address(str(raw))
        except ValueError:
            continue
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        # An unresolvable host is refused, never waved through (GitLab's 2019 bypass).
        raise EgressDenied(f"Refused to connect to {name}: the host name does not resolve.")
    return addresses


def is_allowlisted(host: str, addresses: list[str]) -> bool:
    """True when the operator allowlisted the host by name or every one of its addresses."""
    allow = _allowlist()
    name = _normalise_host(host)
    if allow.allows_name(name):
        return True
    return bool(addresses) and all(allow.allows_address(_address(a)) for a in addresses)


def check_url(url: str, *, require_https: bool = False) -> PinnedTarget:
    """Check an http(s) URL's syntax and host; return where it may be connected to."""
    if not isinstance(url, str) or not url:
        raise EgressDenied("Refused to connect: the URL is empty.")
    if len(url) > MAX_URL_LENGTH:
        raise EgressDenied(f"Refused to connect: the URL is longer than {MAX_URL_LENGTH} characters.")
    if _FORBIDDEN_URL_CHARS.search(url) or not url.isascii():
        raise EgressDenied("Refused to connect: the URL contains whitespace, control or non-ASCII characters.")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise EgressDenied("Refused to connect: only http and https URLs are allowed.")
    if "@" in parts.netloc:
        raise EgressDenied("Refused to connect: URLs with user information (user@host) are not allowed.")
    host = _normalise_host(parts.hostname or "")
    if not host:
        raise EgressDenied("Refused to connect: the URL has no host.")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise EgressDenied("Refused to connect: the URL's port is not valid.") from None
    addresses = check_host(host)
    if require_https and scheme != "https" and not is_allowlisted(host, addresses):
        raise EgressDenied(f"Refused to connect to {host}: only https URLs are allowed.")
    return PinnedTarget(scheme=scheme, host=host, port=port, addresses=addresses)


def connect_checked(host: str, port: int, *, timeout: float | None, addresses: list[str] | None = None,
                    source_address=None, socket_options=()) -> socket.socket:
    """Open a TCP connection to a checked address of `host` (checking now unless `addresses` are given)."""
    addresses = addresses if addresses is not None else check_host(host)
    last_error: OSError | None = None
    for address in addresses:
        try:
            sock = socket.create_connection((address, port), timeout, source_address=source_address)
        except TimeoutError:
            raise
        except OSError as exc:
            last_error = exc
            continue
        for option in socket_options or ():
            sock.setsockopt(*option)
        return sock
    raise last_error or OSError(f"No address to connect to for {host}")


# --- pinned HTTP requests -----------------------------------------------------------------------


class _PinnedBackend(httpcore.SyncBackend):
    """Connects only to the checked addresses of the one target; TLS still verifies `target.host`."""

    def __init__(self, target: PinnedTarget):
        self.target = target

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if _normalise_host(host) != self.target.host or port != self.target.port:
            raise httpcore.ConnectError(f"Refused to connect to {host}:{port}: not the checked target.")
        last_error: httpcore.ConnectError | None = None
        for address in self.target.addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectTimeout:
                raise
            except httpcore.ConnectError as exc:
                last_error = exc
        raise last_error or httpcore.ConnectError(f"No address to connect to for {host}")


class PinnedTransport(httpx.HTTPTransport):
    """An httpx transport whose every connection goes to `target.addresses`."""

    def __init__(self, target: PinnedTarget, **kwargs):
        super().__init__(**kwargs)
        ssl_context = self._pool._ssl_context
        self._pool = httpcore.ConnectionPool(ssl_context=ssl_context, max_connections=1,
                                             network_backend=_PinnedBackend(target))


def egress_http_request(method: str, url: str, *, headers: dict | None = None, data=None,
                        timeout: tuple[float, float] = (5, 10), require_https: bool = False,
                        max_response_bytes: int = MAX_RESPONSE_BYTES) -> httpx.Response:
    """Send one request to a checked, pinned address; redirects are returned, never followed.

    `data` is form-encoded when it is a dict and sent as-is when it is bytes or str. The body
    read is capped at `max_response_bytes` (EgressDenied beyond it).
    """
    target = check_url(url, require_https=require_https)
    connect, read = timeout
    content = data if isinstance(data, (bytes, str)) else None
    form = data if isinstance(data, dict) else None
    with httpx.Client(transport=PinnedTransport(target), trust_env=False, follow_redirects=False,
                      timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect)) as client:
        with client.stream(method, url, headers=headers, data=form, content=content) as response:
            body = _read_capped(response, max_response_bytes, target.host)
    # The body is already decoded: drop the headers that described its wire form.
    headers_out = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(status_code=response.status_code, headers=headers_out, content=body,
                          request=response.request)


def _read_capped(response: httpx.Response, limit: int, host: str) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise EgressDenied(f"The response from {host} is larger than {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)

"""Per-workspace rate limits on the shared cache (database or Redis): one function for every caller.

`throttle_hit` counts one request against a scope's rate (`THROTTLE_RATES`) and says how long to wait when it is
over. DRF views reach it through `WorkspaceRateThrottle` (their `throttle_scope`, keyed by the caller's workspace,
key or address); a service that counts only some requests (destination validation counts test writes, whether
the API or the admin asks for them) calls it itself, with `workspace_ident` so that both count in the same place.

A throttle that cannot reach its cache lets the request through and logs it: the database cache writes on every
request, so a full disk (or a Redis outage) would otherwise turn every request, reads included, into a 500. It then
leaves the cache alone for CIRCUIT_OPEN_SECONDS (the circuit is open, and /healthz says so), so that a hung Redis
costs one request its socket timeout (CACHE_SOCKET_TIMEOUT), not every request.
"""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

log = logging.getLogger("core.throttling")
# One log line per this many seconds while the cache keeps failing, not one per request.
FAILURE_LOG_INTERVAL_SECONDS = 60.0
_last_failure_logged = [float("-inf")]
CIRCUIT_OPEN_SECONDS = 10.0
_circuit_open_until = [float("-inf")]
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def workspace_ident(workspace_id: uuid.UUID) -> str:
    """Whom a workspace's requests count for (the API's callers acting in one workspace count here too)."""
    return f"ws:{workspace_id}"


def throttle_hit(*, scope: str, ident: str) -> float | None:
    """Count one request of `ident` in `scope`: None when the rate allows it, else the seconds until it would.

    A refused request is not counted. A scope without a rate is not limited.
    """
    rate = settings.THROTTLE_RATES.get(scope)
    if not rate:
        return None
    limit, duration = _parse_rate(rate)
    if cache_circuit_open():
        return None
    try:
        return _hit(f"throttle:{scope}:{ident}", limit, duration)
    except Exception as exc:  # noqa: BLE001 - any cache failure: let the request through, and say so
        _circuit_open_until[0] = time.monotonic() + CIRCUIT_OPEN_SECONDS
        _log_failure(scope, exc)
        return None


def cache_circuit_open() -> bool:
    """Whether the throttles leave their cache alone for now, after it failed."""
    return time.monotonic() < _circuit_open_until[0]


def _parse_rate(rate: str) -> tuple[int, int]:
    """'10/min' -> (10, 60): requests per period (s, m, h or d, as DRF spells them)."""
    count, period = rate.split("/")
    return int(count), _PERIODS[period.strip()[0]]


def _hit(key: str, limit: int, duration: int) -> float | None:
    # The history is DRF's: the times of the counted requests in the window, newest first.
    now = time.time()
    history = [moment for moment in cache.get(key, []) if moment > now - duration]
    if len(history) >= limit:
        # Allowed again once enough of the counted requests left the window.
        return float(duration) if limit == 0 else history[limit - 1] + duration - now
    cache.set(key, [now, *history], duration)
    return None


class WorkspaceRateThrottle(BaseThrottle):
    """Throttle a DRF view by its `throttle_scope`, keyed by the caller's workspace (or key, or IP)."""

    def allow_request(self, request, view) -> bool:
        principal = getattr(request, "user", None)
        ident = getattr(principal, "throttle_ident", None) or self.get_ident(request)
        self._wait = throttle_hit(scope=getattr(view, "throttle_scope", "default"), ident=ident)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


def _log_failure(scope: str, exc: Exception) -> None:
    now = time.monotonic()
    if now - _last_failure_logged[0] < FAILURE_LOG_INTERVAL_SECONDS:
        return
    _last_failure_logged[0] = now
    log.warning("rate limiting is off: its cache failed (%s: %s); requests in scope %s and others are let through "
                "until it recovers", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "", scope)

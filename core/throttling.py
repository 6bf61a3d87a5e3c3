"""Per-workspace rate limits on the shared cache (database or Redis).

A throttle that cannot reach its cache lets the request through and logs it: the database cache writes on every
request, so a full disk (or a Redis outage) would otherwise turn every request, reads included, into a 500.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

log = logging.getLogger("core.throttling")
# One log line per this many seconds while the cache keeps failing, not one per request.
FAILURE_LOG_INTERVAL_SECONDS = 60.0
_last_failure_logged = [float("-inf")]


class WorkspaceRateThrottle(SimpleRateThrottle):
    """Throttle by the view's `throttle_scope`, keyed by the caller's workspace (or key, or IP)."""

    def __init__(self):
        # Rates are resolved per request so that settings overrides take effect.
        pass

    def allow_request(self, request, view):
        self.scope = getattr(view, "throttle_scope", "default")
        rate = settings.THROTTLE_RATES.get(self.scope)
        if not rate:
            return True
        self.rate = rate
        self.num_requests, self.duration = self.parse_rate(rate)
        try:
            return super().allow_request(request, view)
        except Exception as exc:
            _log_failure(self.scope, exc)
            return True

    def get_cache_key(self, request, view):
        principal = getattr(request, "user", None)
        ident = getattr(principal, "throttle_ident", None) or self.get_ident(request)
        return f"throttle:{self.scope}:{ident}"


def _log_failure(scope: str, exc: Exception) -> None:
    now = time.monotonic()
    if now - _last_failure_logged[0] < FAILURE_LOG_INTERVAL_SECONDS:
        return
    _last_failure_logged[0] = now
    log.warning("rate limiting is off: its cache failed (%s: %s); requests in scope %s and others are let through "
                "until it recovers", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "", scope)

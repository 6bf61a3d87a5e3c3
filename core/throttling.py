"""Per-workspace rate limits on the shared cache (database or Redis)."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


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
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        principal = getattr(request, "user", None)
        ident = getattr(principal, "throttle_ident", None) or self.get_ident(request)
        return f"throttle:{self.scope}:{ident}"

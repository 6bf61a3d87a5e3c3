"""A served project's thread TTL: `checkpointer.ttl` of its langgraph.json, as langgraph-cli documents it
(ThreadTTLConfig), which `serve_graphs` applies when it starts (the service itself has none).

`default_ttl` (minutes) and `strategy` (`delete` or `keep_latest`) are given to every thread created without a
`ttl` of its own (by the Agent Server API or the chat protocol); `sweep_interval_minutes` is how often the sweep
(agentserver.jobs) looks for expired threads and `sweep_limit` how many it handles per pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from core.deadlines import minutes_after
from core.registry import periodic_reschedule

STRATEGIES = ("delete", "keep_latest")
SWEEP_JOB = "agentserver.sweep_expired_threads"


@dataclass(frozen=True)
class ThreadTtl:
    strategy: str = "delete"
    default_ttl: float | None = None
    sweep_limit: int = 100


_current = ThreadTtl()


def parse(raw: object) -> tuple[ThreadTtl, float | None]:
    """The TTL settings and the sweep interval (minutes) of a `checkpointer.ttl` value; raises ValueError."""
    if raw is None:
        return ThreadTtl(), None
    if not isinstance(raw, dict):
        raise ValueError("checkpointer.ttl must be an object")
    unknown = set(raw) - {"strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit"}
    if unknown:
        raise ValueError(f"checkpointer.ttl has unknown keys: {', '.join(sorted(unknown))}")
    strategy = raw.get("strategy", "delete")
    if strategy not in STRATEGIES:
        raise ValueError(f"checkpointer.ttl.strategy must be one of {', '.join(STRATEGIES)}")
    default_ttl = _positive(raw, "default_ttl")
    interval = _positive(raw, "sweep_interval_minutes")
    limit = _positive(raw, "sweep_limit")
    return ThreadTtl(strategy=strategy, default_ttl=default_ttl,
                     sweep_limit=int(limit) if limit else ThreadTtl.sweep_limit), interval


def _positive(raw: dict, key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"checkpointer.ttl.{key} must be a positive number of minutes" if key != "sweep_limit"
                         else "checkpointer.ttl.sweep_limit must be a positive number")
    return float(value)


def configure(raw: object) -> ThreadTtl:
    """Apply a project's `checkpointer.ttl` to this process; raises ValueError for an invalid one."""
    global _current
    _current, interval = parse(raw)
    if interval is not None:
        periodic_reschedule(SWEEP_JOB, every_seconds=interval * 60)
    return _current


def current() -> ThreadTtl:
    return _current


def default_ttl() -> dict | None:
    """The `ttl` a thread created without one gets (as POST /threads stores it), or None."""
    if _current.default_ttl is None:
        return None
    return {"strategy": _current.strategy, "ttl": _current.default_ttl}


def expiry(ttl: dict | None) -> datetime | None:
    """When a thread with this `ttl` created (or given it) now expires; None without one."""
    return minutes_after(timezone.now(), ttl["ttl"]) if ttl else None


def default_fields() -> dict:
    """`ttl` and `expires_at` of a new thread without a TTL of its own (nothing without a project default)."""
    ttl = default_ttl()
    return {"ttl": ttl, "expires_at": expiry(ttl)} if ttl else {}

"""Background work of the trace store: retention."""

from __future__ import annotations

from core.registry import periodic
from tracing import services


@periodic("tracing.prune_runs", every_seconds=3600)
def prune_runs() -> None:
    """Delete runs older than TRACING_RETENTION_DAYS, in short batches."""
    services.runs_prune_expired()

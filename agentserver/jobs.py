"""Background work of the Agent Server API, run by `run_worker`: the sweep of threads whose TTL has run out."""

from __future__ import annotations

import logging

from django.utils import timezone

from chat.models import ChatThread
from core.registry import periodic

log = logging.getLogger("agentserver.jobs")
# Threads handled per sweep: a backlog is worked off over several sweeps instead of in one long job.
SWEEP_BATCH = 100


@periodic("agentserver.sweep_expired_threads", every_seconds=60)
def sweep_expired_threads() -> None:
    """Apply the TTL strategy of every thread past its `expires_at` (threads.create / update with `ttl`)."""
    if not ChatThread.objects.filter(expires_at__lte=timezone.now()).exists():
        return
    # Imported here: they load the served graphs' runtime (LangGraph), which a worker needs only when a thread
    # actually expires.
    from agentserver import selectors, services

    for thread in selectors.threads_expired(now=timezone.now(), limit=SWEEP_BATCH):
        outcome = services.thread_expire(thread=thread)
        log.info("thread %s expired: %s", thread.id, outcome)

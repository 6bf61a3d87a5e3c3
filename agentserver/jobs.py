"""Background work of the Agent Server API, run by `run_worker` (and a revision's serving process): the sweep of
threads whose TTL has run out, and the firing of crons whose tick has come."""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils import timezone

from agentruntime.models import ChatThread
from agentruntime.selectors import thread_ttl_current
from agentserver.models import Cron
from core.registry import periodic

log = logging.getLogger("agentserver.jobs")


@periodic("agentserver.sweep_expired_threads", every_seconds=60)
def sweep_expired_threads() -> None:
    """Apply the TTL strategy of every thread past its `expires_at` (threads.create / update with `ttl`)."""
    if not ChatThread.objects.filter(expires_at__lte=timezone.now()).exists():
        return
    # Imported here: they load the served graphs' runtime (LangGraph), which a worker needs only when a thread
    # actually expires.
    from agentserver import selectors, services

    for thread in selectors.threads_expired(now=timezone.now(), limit=thread_ttl_current().sweep_limit):
        outcome = services.thread_expire(thread=thread)
        log.info("thread %s expired: %s", thread.id, outcome)


@periodic("agentserver.fire_due_crons", every_seconds=settings.AGENTSERVER_CRON_POLL_SECONDS)
def fire_due_crons() -> None:
    """Queue one run for every cron whose tick has come (agentserver.crons.cron_fire claims each tick once)."""
    if not Cron.objects.filter(enabled=True, next_run_date__lte=timezone.now()).exists():
        return
    # Imported here, as above: creating a run loads the served graphs' runtime.
    from agentserver import crons

    fired = crons.crons_fire_due()
    log.info("crons fired: %d", fired)

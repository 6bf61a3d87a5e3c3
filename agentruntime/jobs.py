"""Background work of the chat, done by `run_worker`: failing chat runs whose process died, and event retention."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db.models import Count

from agentruntime.events.hub import publish
from agentruntime.models import ChatEvent
from agentruntime.store.config_shape import SWEEP_JOB, settings_sweep_seconds
from agentruntime.store.expiry import store_sweep_expired
from agentruntime.writes.event_log import events_enforce_retention
from agentruntime.writes.run_records import runs_sweep_dead
from core.registry import periodic, worker_service

log = logging.getLogger("agentruntime.jobs")


@periodic("chat.sweep_dead_runs", every_seconds=settings.CHAT_SWEEP_SECONDS)
def sweep_dead_runs() -> None:
    """Fail active runs without a heartbeat for CHAT_RUN_STALE_SECONDS, so no client waits forever."""
    for thread_id, seq in runs_sweep_dead(stale_seconds=settings.CHAT_RUN_STALE_SECONDS):
        # With Redis this reaches the subscribers at once; with the in-memory layer they find it by polling.
        async_to_sync(publish)(thread_id, seq)


@periodic(SWEEP_JOB, every_seconds=settings_sweep_seconds())
def sweep_expired_store_items() -> None:
    """Delete the store items whose TTL ran out (store.ttl; agentruntime/store/config.py sets how often, from
    sweep_interval_minutes). They are invisible from their expiry on already: this reclaims the space."""
    deleted = store_sweep_expired()
    if deleted:
        log.info("deleted %d expired store items", deleted)


@periodic("chat.enforce_event_retention", every_seconds=600)
def enforce_event_retention() -> None:
    """Trim threads above CHAT_EVENT_RETENTION events (runs already trim their thread when they end)."""
    keep = settings.CHAT_EVENT_RETENTION
    over = (ChatEvent.objects.values("thread_id").annotate(count=Count("id")).filter(count__gt=keep)
            .values_list("thread_id", flat=True))
    for thread_id in list(over):
        dropped = events_enforce_retention(thread_id=thread_id, keep=keep)
        if dropped:
            log.info("dropped %d old events of thread %s", dropped, thread_id)


@worker_service("chat.run_executor")
def run_executor(stop) -> None:
    """With CHAT_RUN_EXECUTOR "worker", run_worker processes execute the queued runs (web processes do not)."""
    if settings.CHAT_RUN_EXECUTOR != "worker":
        return
    # Imported here: graphs and LangGraph are loaded only by workers that execute runs.
    from agentruntime.runs.queue import run_executor_until

    run_executor_until(stop)

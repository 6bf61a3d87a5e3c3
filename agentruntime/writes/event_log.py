"""Writes of a thread's event log: events stored under the next seqs of their thread, and its retention."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Min

from agentruntime.events import statements as event_sql
from agentruntime.events.frames import Frame
from agentruntime.events.records import StoredEvent, WireEvent
from agentruntime.models import ChatEvent, ChatRun, ChatThread
from agentruntime.writes.thread_records import thread_not_found


class RunEnded(Exception):
    """Events were offered for a run that has already ended (failed by another process meanwhile)."""


@transaction.atomic
def events_append(*, thread_id: str, run_id: uuid.UUID | str, events: Sequence[WireEvent | Frame],
                  active_only: bool = False) -> list[StoredEvent]:
    """Store events under the next seqs of their thread; return them as stored (with seq and wire payload).

    The counter is bumped in the same transaction as the insert: the row lock (PostgreSQL) or the write lock
    (SQLite) serialises concurrent writers, so seqs never clash across processes. With `active_only`, the run must
    still be active: nothing follows the terminal event of a run that another process ended.

    Raises:
        NotFound: the thread was deleted.
        RunEnded: `active_only`, and the run has ended.
    """
    last = event_sql.bump_last_seq(thread_id=thread_id, count=len(events))
    if last is None:
        raise thread_not_found(thread_id)
    if active_only and not event_sql.run_has_status(run_id=run_id, status=ChatRun.Status.RUNNING):
        raise RunEnded(run_id)
    first = last - len(events) + 1
    stored = [StoredEvent(first + i, event.channel, tuple(event.namespace), event.encode(first + i))
              for i, event in enumerate(events)]
    run_value = event_sql.run_id_value(run_id)
    event_sql.insert_events([(thread_id, run_value, row.seq, row.channel, orjson.dumps(row.namespace).decode(),
                              row.payload.decode()) for row in stored])
    return stored


def events_enforce_retention(*, thread_id: str, keep: int | None = None) -> int:
    """Keep at most `keep` events (CHAT_EVENT_RETENTION) by dropping whole runs, oldest first; events dropped.

    The newest run is never dropped, even alone above the limit: a run in progress must stay replayable.
    """
    keep = settings.CHAT_EVENT_RETENTION if keep is None else keep
    # Counted outside a transaction first: after almost every run nothing is due, and on SQLite a transaction
    # would queue for the write lock just to count.
    if ChatEvent.objects.filter(thread_id=thread_id).count() <= keep:
        return 0
    return _events_drop_oldest_runs(thread_id=thread_id, keep=keep)


@transaction.atomic
def _events_drop_oldest_runs(*, thread_id: str, keep: int) -> int:
    total = ChatEvent.objects.filter(thread_id=thread_id).count()
    if total <= keep:
        return 0
    runs = list(ChatEvent.objects.filter(thread_id=thread_id).values("run_id")
                .annotate(first=Min("seq"), last=Max("seq"), count=Count("id")).order_by("first"))
    dropped_runs, dropped, through = [], 0, 0
    for run in runs[:-1]:
        if total - dropped <= keep:
            break
        dropped_runs.append(run["run_id"])
        dropped += run["count"]
        through = max(through, run["last"])
    if dropped_runs:
        ChatEvent.objects.filter(thread_id=thread_id, run_id__in=dropped_runs).delete()
        ChatThread.objects.filter(pk=thread_id, expired_through_seq__lt=through).update(expired_through_seq=through)
    return dropped

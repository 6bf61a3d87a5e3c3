"""The runtime's rows as it reads them: threads visible to a caller, chat runs, interrupts, and the event log by seq.
The other apps reach these through the runtime's face, `agentruntime.selectors`."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from agentruntime.access import Caller
from agentruntime.events import statements as event_sql
from agentruntime.events.records import StoredEvent
from agentruntime.models import ChatEvent, ChatInterrupt, ChatRun, ChatThread
from agentruntime.writes.thread_records import thread_not_found, thread_owned_by

PAGE = 500


def thread_get_for_caller(*, thread_id: str, caller: Caller) -> ChatThread:
    """The caller's thread.

    Raises:
        NotFound: missing, or someone else's (the same answer for both).
    """
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None or not thread_owned_by(thread, caller):
        raise thread_not_found(thread_id)
    return thread


def thread_expired(now: datetime | None = None) -> Q:
    """Threads whose TTL has run out with the `delete` strategy: no list, search or read shows them, even before
    the sweep (agentserver.jobs) removes them. A `keep_latest` thread stays: the sweep only prunes it."""
    return Q(expires_at__lte=now or timezone.now()) & ~Q(ttl__strategy="keep_latest")


def thread_list_for_caller(*, caller: Caller, limit: int = 200, title_contains: str = "") -> list[ChatThread]:
    """The caller's threads that have state (whose title contains `title_contains`, any case), newest activity
    first."""
    threads = ChatThread.objects.filter(has_state=True, **caller.owner_filter).exclude(thread_expired())
    if title_contains.strip():
        threads = threads.filter(title__icontains=title_contains.strip())
    return list(threads.order_by("-updated_at")[:limit])


def events_after(*, thread_id: str, after_seq: int, limit: int = PAGE, exclude_runs: Collection[str] = ()
                 ) -> list[StoredEvent]:
    """Stored events of the thread with seq > `after_seq`, oldest first, leaving out the runs `exclude_runs`."""
    values: Iterable[tuple]
    if exclude_runs:
        rows = ChatEvent.objects.filter(thread_id=thread_id, seq__gt=after_seq).exclude(run_id__in=list(exclude_runs))
        values = rows.order_by("seq").values_list("seq", "channel", "namespace", "payload")[:limit]
    else:  # what every stream and hub reads
        values = event_sql.events_after(thread_id=thread_id, after_seq=after_seq, limit=limit)
    return [StoredEvent(seq, channel, tuple(orjson.loads(namespace)), payload.encode())
            for seq, channel, namespace, payload in values]


def thread_cursor_state(*, thread_id: str) -> tuple[int, int] | None:
    """(last seq, expired-through seq) of the thread, or None when it is gone."""
    return event_sql.cursor_state(thread_id=thread_id)


def thread_last_seqs(*, thread_ids: list[str]) -> dict[str, int]:
    """The last seq of each of these threads (the ones that still exist)."""
    found: dict[str, int] = {}
    for start in range(0, len(thread_ids), 500):
        found.update(ChatThread.objects.filter(pk__in=thread_ids[start:start + 500]).values_list("id", "last_seq"))
    return found


def run_get(*, thread: ChatThread, run_id: uuid.UUID | str) -> ChatRun | None:
    return ChatRun.objects.filter(thread=thread, pk=run_id).first()


def run_latest(*, thread: ChatThread) -> ChatRun | None:
    return ChatRun.objects.filter(thread=thread).order_by("-created_at").first()


def replay_start(*, thread_id: str, scope: str) -> int:
    """Where a stream without a cursor starts: the thread's beginning, or (scope "run") its newest run's."""
    if scope != "run":
        return 0
    run = ChatRun.objects.filter(thread_id=thread_id).order_by("-created_at").values_list("start_seq", flat=True)
    return run.first() or 0


def run_active(*, thread: ChatThread) -> ChatRun | None:
    return ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).first()


def run_thread_id(*, run_id: uuid.UUID | str) -> str | None:
    return ChatRun.objects.filter(pk=run_id).values_list("thread_id", flat=True).first()


def run_cancel_state(*, run_id: uuid.UUID | str) -> tuple[str, bool] | None:
    """(status, whether a cancel was requested) of the run, or None when there is no such run."""
    try:
        run_id = uuid.UUID(str(run_id))
    except ValueError:
        return None
    row = ChatRun.objects.filter(pk=run_id).values_list("status", "cancel_requested_at").first()
    return None if row is None else (row[0], row[1] is not None)


def run_lifecycle_events(*, run: ChatRun) -> list[dict]:
    """The run's stored lifecycle events, decoded, oldest first (what agent.getTree is built from)."""
    rows = ChatEvent.objects.filter(run=run, channel="lifecycle").order_by("seq").values_list("payload", flat=True)
    return [orjson.loads(payload) for payload in rows]


def run_list_stale(*, now: datetime | None = None) -> QuerySet[ChatRun]:
    """Runs still marked running whose process stopped beating (CHAT_RUN_STALE_SECONDS): the sweep ends them."""
    limit = (now or timezone.now()) - timedelta(seconds=settings.CHAT_RUN_STALE_SECONDS)
    return ChatRun.objects.filter(status=ChatRun.Status.RUNNING, heartbeat_at__lt=limit)


def interrupt_namespaces(*, thread_id: str, interrupt_ids: Collection[str]) -> dict[str, list[str]]:
    """Where the thread's `input.requested` events asked for these interrupts (the newest event of each)."""
    wanted, found = set(interrupt_ids), {}
    rows = ChatEvent.objects.filter(thread_id=thread_id, channel="input").order_by("-seq")
    for namespace, payload in rows.values_list("namespace", "payload").iterator():
        interrupt_id = ((orjson.loads(payload).get("params") or {}).get("data") or {}).get("interrupt_id")
        if interrupt_id in wanted and interrupt_id not in found:
            found[interrupt_id] = orjson.loads(namespace)
            if len(found) == len(wanted):
                break
    return found


def interrupt_requests(*, thread_id: str) -> list[tuple[str, list[str], object]]:
    """The thread's `input.requested` events still in its log, oldest first, one per interrupt:
    (interrupt id, namespace, payload)."""
    found: dict[str, tuple[str, list[str], object]] = {}
    rows = ChatEvent.objects.filter(thread_id=thread_id, channel="input").order_by("seq")
    for namespace, payload in rows.values_list("namespace", "payload").iterator():
        data = (orjson.loads(payload).get("params") or {}).get("data") or {}
        interrupt_id = data.get("interrupt_id")
        if isinstance(interrupt_id, str) and interrupt_id not in found:
            found[interrupt_id] = (interrupt_id, orjson.loads(namespace), data.get("payload"))
    return list(found.values())


def interrupt_answers(*, thread_id: str) -> dict[str, object]:
    """interrupt id → the answer `input.respond` gave it, for the thread's answered interrupts."""
    rows = ChatInterrupt.objects.filter(thread_id=thread_id, answered_at__isnull=False)
    return dict(rows.values_list("interrupt_id", "response"))


def task_call_ids(*, thread_id: str, segments: Collection[str]) -> dict[str, str]:
    """Namespace segment `tools:<task>` → the id of the coordinator's tool call that task executed (a subagent's
    `task` call runs its subagent there), from the `tool-started` events at those namespaces in the thread's log."""
    found: dict[str, str] = {}
    namespaces = [orjson.dumps([segment]).decode() for segment in segments]
    rows = ChatEvent.objects.filter(thread_id=thread_id, channel="tools", namespace__in=namespaces).order_by("seq")
    for namespace, payload in rows.values_list("namespace", "payload").iterator():
        data = (orjson.loads(payload).get("params") or {}).get("data") or {}
        if data.get("event") == "tool-started" and isinstance(data.get("tool_call_id"), str):
            found.setdefault(orjson.loads(namespace)[0], data["tool_call_id"])
    return found

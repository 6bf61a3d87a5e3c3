"""Writes of the chat: threads and their owners, chat runs, the event log, retention and the dead-run sweeper.

All of these are synchronous ORM code; async callers go through `chat.db_executor.run`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, cast

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Min
from django.utils import timezone

from chat import thread_ttl
from chat.access import Caller
from chat.events import statements as event_sql
from chat.frames import Frame
from chat.models import ChatEvent, ChatInterrupt, ChatRun, ChatThread, Checkpoint
from chat.runs.kinds import policy
from chat.wire import StoredEvent, WireEvent, lifecycle_event
from core import process_identity
from core.exceptions import Conflict, NotFound

log = logging.getLogger("chat")
MAX_THREAD_ID_LENGTH = 255
# Automatic titles stay short enough to tell threads apart in the sidebar; a title given by the user may use the
# whole column.
TITLE_LENGTH = 48
TITLE_MAX_LENGTH = cast(int, ChatThread._meta.get_field("title").max_length)  # a CharField: always set
DEAD_RUN_ERROR = "The server process executing this run stopped before it finished."
RESTARTED_ERROR = ("The server process restarted before this run finished: the process executing it stopped "
                   "without ending it.")
# A live process acknowledges a cancel within its poll interval (0.5 s); one that has not after this long is gone.
CANCEL_ACK_SECONDS = 3.0
# In a run's kwargs: delete the run once it stopped (runs.cancel with action "rollback").
ROLLBACK_KEY = "rollback_on_stop"


class RunEnded(Exception):
    """Events were offered for a run that has already ended (failed by another process meanwhile)."""


class InvalidTitle(ValueError):
    pass


class RunActive(Conflict):
    def __init__(self, run_id: uuid.UUID | str) -> None:
        self.run_id = run_id
        super().__init__(f"Run {run_id} is still active on this thread: cancel it or wait for it to finish "
                         f"before starting another.")


class InterruptAnswered(Exception):
    def __init__(self, interrupt_id: str) -> None:
        self.interrupt_id = interrupt_id
        super().__init__(f"Interrupt {interrupt_id} was already answered.")


def thread_not_found(thread_id: str) -> NotFound:
    return NotFound(f"Thread {thread_id} not found")


def thread_claim(*, thread_id: str, caller: Caller) -> ChatThread:
    """The caller's thread `thread_id`, created for them when nobody has it yet.

    Raises:
        NotFound: the thread belongs to someone else (the same answer as for a missing thread elsewhere).
    """
    if not thread_id or len(thread_id) > MAX_THREAD_ID_LENGTH:
        raise thread_not_found(thread_id[:MAX_THREAD_ID_LENGTH])
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None:
        try:
            with transaction.atomic():
                return ChatThread.objects.create(id=thread_id, **caller.owner_fields, **thread_ttl.default_fields())
        except IntegrityError:
            # Two first requests raced; whoever won owns it.
            thread = ChatThread.objects.get(pk=thread_id)
    if not thread_owned_by(thread, caller):
        raise thread_not_found(thread_id)
    return thread


def thread_owned_by(thread: ChatThread, caller: Caller) -> bool:
    owner = caller.owner_filter
    return (thread.owner_kind == owner["owner_kind"] and thread.workspace_id == owner["workspace_id"]
            and thread.user_id == owner["user_id"])


def thread_create(*, thread_id: str, owner: dict, metadata: dict | None = None, ttl: dict | None = None,
                  **fields: Any) -> ChatThread:
    """A new thread of `owner` (a Caller's owner_fields), expiring after `ttl` (none: never); `fields` are
    ChatThread's others (graph_name, has_state, title).

    Raises:
        IntegrityError: the id exists (anyone's: ids are global).
    """
    return ChatThread.objects.create(id=thread_id, **owner, metadata=metadata or {}, ttl=ttl,
                                     expires_at=thread_ttl.expiry(ttl), **fields)


@transaction.atomic
def thread_copy(*, thread: ChatThread) -> ChatThread:
    """A new thread of the same owner with the same title, metadata and TTL (its clock restarted) and a copy of every
    checkpoint."""
    from chat.checkpointer.saver import get_checkpointer

    copy = thread_create(thread_id=str(uuid.uuid4()), owner=_owner_fields(thread), metadata=dict(thread.metadata),
                         ttl=thread.ttl, title=thread.title, graph_name=thread.graph_name, has_state=thread.has_state)
    get_checkpointer().copy_thread(thread.id, copy.id)
    return copy


def _owner_fields(thread: ChatThread) -> dict:
    return {"owner_kind": thread.owner_kind, "workspace_id": thread.workspace_id, "user_id": thread.user_id}


def thread_update(*, thread: ChatThread, metadata: dict | None = None, ttl: dict | None = None) -> ChatThread:
    """Merge `metadata` into the thread's; a new `ttl` restarts its clock."""
    if metadata:
        thread.metadata = {**thread.metadata, **metadata}
    if ttl is not None:
        thread.ttl, thread.expires_at = ttl, thread_ttl.expiry(ttl)
    thread.save(update_fields=["metadata", "ttl", "expires_at", "updated_at"])
    return thread


def thread_restart_clock(*, thread: ChatThread) -> None:
    """The thread expires one TTL from now (its checkpoints were just pruned to the latest)."""
    ChatThread.objects.filter(pk=thread.pk).update(expires_at=thread_ttl.expiry(thread.ttl))


def thread_mark_graph(*, thread: ChatThread, marks: dict, graph_name: str) -> None:
    """Merge `marks` into the thread's metadata and remember the graph its runs use (the thread has state now)."""
    metadata = {**(thread.metadata or {}), **marks}
    ChatThread.objects.filter(pk=thread.pk).update(metadata=metadata, has_state=True, graph_name=graph_name,
                                                   updated_at=timezone.now())
    thread.metadata = metadata


def thread_lock(*, thread: ChatThread) -> None:
    """Hold the thread's row until the transaction ends: runs of one thread are admitted one at a time."""
    ChatThread.objects.select_for_update().filter(pk=thread.pk).first()


def thread_touch(*, thread: ChatThread, messages: Sequence | None = None, graph_name: str | None = None) -> None:
    """Mark that the thread has state now, title it after its first human message, and remember the graph its
    run uses (`graph_name`, when given)."""
    fields = {"has_state": True, "updated_at": timezone.now()}
    if graph_name is not None:
        fields["graph_name"] = graph_name
    if not thread.title:
        title = title_from_messages(messages or [])
        if title:
            fields["title"] = title
    ChatThread.objects.filter(pk=thread.pk).update(**fields)
    for name, value in fields.items():
        setattr(thread, name, value)


def title_from_messages(messages: Sequence) -> str:
    for message in messages:
        kind = message.get("type") or message.get("role") if isinstance(message, dict) else getattr(
            message, "type", None)
        if kind not in ("human", "user"):
            continue
        content = message.get("content") if isinstance(message, dict) else message.content
        if isinstance(content, list):
            content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
        text = shorten_title(str(content or ""))
        if text:
            return text
    return ""


def shorten_title(text: str, limit: int = TITLE_LENGTH) -> str:
    """`text` on one line, cut at the last word boundary that fits in `limit` characters (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if " " in cut and text[limit - 1] != " ":
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:.-–—") + "…"


def validate_title(title: object) -> str:
    """The title with its whitespace collapsed. Raises InvalidTitle: not a string, blank, or too long."""
    if not isinstance(title, str):
        raise InvalidTitle("title must be a string.")
    cleaned = " ".join(title.split())
    if not cleaned:
        raise InvalidTitle("title must not be blank.")
    if len(cleaned) > TITLE_MAX_LENGTH:
        raise InvalidTitle(f"title must be at most {TITLE_MAX_LENGTH} characters long (it has {len(cleaned)}).")
    return cleaned


def thread_rename(*, thread: ChatThread, title: object) -> ChatThread:
    """Give the thread the user's own title (whitespace collapsed).

    Raises:
        InvalidTitle: not a string, blank, or longer than the title column.
    """
    cleaned = validate_title(title)
    # Not an activity: the thread keeps its place in the newest-first list.
    thread.title = cleaned
    ChatThread.objects.filter(pk=thread.pk).update(title=cleaned)
    return thread


@transaction.atomic
def thread_delete(*, thread: ChatThread) -> None:
    """Remove the thread's runs and event log (its checkpoints are the checkpointer's to delete)."""
    thread_delete_by_id(thread_id=thread.pk)


def thread_delete_by_id(*, thread_id: str) -> None:
    """`thread_delete` without reading the thread first (nothing happens when it is gone). Call it in a transaction:
    its statements belong together."""
    ChatRun.objects.filter(thread_id=thread_id, status=ChatRun.Status.RUNNING).update(
        cancel_requested_at=timezone.now())
    # Three statements, children first, where Django's cascade takes five (it reads the runs to delete their events,
    # which are the thread's events anyway). ChatEvent and ChatRun are the only tables that refer to threads and
    # runs; the database's foreign keys would refuse to leave a row behind.
    with connection.cursor() as cursor:
        for sql in _THREAD_DELETE_SQL:
            cursor.execute(sql, [thread_id])


_THREAD_DELETE_SQL = (f"DELETE FROM {ChatEvent._meta.db_table} WHERE thread_id = %s",
                      f"DELETE FROM {ChatRun._meta.db_table} WHERE thread_id = %s",
                      f"DELETE FROM {ChatThread._meta.db_table} WHERE id = %s")


# --- Runs ---------------------------------------------------------------------------------------------------------
def run_create(*, thread: ChatThread, run_id: uuid.UUID | str, kind: str = ChatRun.Kind.PROTOCOL,
               executing: bool = False, start_seq: int | None = None, **fields: Any) -> ChatRun:
    """The one place a chat run is made: queued for an executor to claim, or (`executing`) running in this process
    under its identity. Its own events come after `start_seq`, by default the thread's last seq so far (a caller
    that knows it, for a thread it just made, saves the read). `fields` are ChatRun's others (graph_name, kwargs, …).

    Raises:
        IntegrityError: `executing` while another run of the thread is running.
    """
    if start_seq is None:
        start_seq = ChatThread.objects.filter(pk=thread.pk).values_list("last_seq", flat=True).get()
    if executing:
        fields.update(status=ChatRun.Status.RUNNING, worker=process_identity.identity(),
                      worker_instance=process_identity.instance())
    else:
        fields["status"] = ChatRun.Status.PENDING
    return ChatRun.objects.create(id=run_id, thread=thread, kind=kind, start_seq=start_seq, **fields)


def run_register(*, thread: ChatThread, run_id: uuid.UUID | str, queue: dict | None = None) -> ChatRun:
    """Register a protocol run if the thread has no other: running in this process; a run left behind by a process
    that is gone is failed first.

    With `queue` (what an executor needs: graph_name, kwargs, metadata), the run is queued for run_worker's
    executors instead (CHAT_RUN_EXECUTOR "worker").

    Raises:
        RunActive: another run is active on the thread.
    """
    queued = ChatRun.objects.filter(thread=thread, status=ChatRun.Status.PENDING).values_list("pk", flat=True).first()
    if queued is not None:
        raise RunActive(queued)
    if queue is not None:
        running = ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).first()
        if running is not None:
            if (reason := run_orphan_reason(run=running)) is None:
                raise RunActive(running.pk)
            run_fail_dead(run=running, error=reason)
        return run_create(thread=thread, run_id=run_id, **queue)
    for _ in range(2):
        try:
            with transaction.atomic():
                return run_create(thread=thread, run_id=run_id, executing=True)
        except IntegrityError:
            active = ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).first()
            if active is None:
                continue
            reason = run_orphan_reason(run=active)
            if reason is None:
                raise RunActive(active.id) from None
            run_fail_dead(run=active, error=reason)
    raise RunActive("unknown")


@transaction.atomic
def run_create_answering(*, thread: ChatThread, run_id: uuid.UUID | str, answers: dict[str, Any],
                         namespaces: dict[str, list[str]], queue: dict | None = None) -> ChatRun:
    """Claim each answered interrupt, then register the run that resumes the thread with the answers.

    The claim is a conditional update of the interrupt's row (created when missing): under concurrent answers to
    one interrupt, exactly one transaction updates it, the others roll back.

    Raises:
        InterruptAnswered: one of the interrupts was answered already (nothing is claimed).
        RunActive: another run is active on the thread (nothing is claimed).
    """
    ChatInterrupt.objects.bulk_create(
        [ChatInterrupt(thread=thread, interrupt_id=interrupt_id,
                       namespace=orjson.dumps(namespaces.get(interrupt_id, [])).decode()) for interrupt_id in answers],
        ignore_conflicts=True)
    _interrupts_release_unconsumed(thread=thread, interrupt_ids=list(answers))
    now = timezone.now()
    for interrupt_id, response in answers.items():
        if not ChatInterrupt.objects.filter(thread=thread, interrupt_id=interrupt_id, answered_at__isnull=True).update(
                answered_at=now, response=response):
            raise InterruptAnswered(interrupt_id)
    run = run_register(thread=thread, run_id=run_id, queue=queue)
    ChatInterrupt.objects.filter(thread=thread, interrupt_id__in=list(answers)).update(run=run)
    return run


def _interrupts_release_unconsumed(*, thread: ChatThread, interrupt_ids: list[str]) -> None:
    """Reopen answers whose run failed before it checkpointed anything (its process died at once): the answer never
    reached the graph. Conditional on that run, so concurrent answers still claim the reopened row once."""
    rows = ChatInterrupt.objects.filter(thread=thread, interrupt_id__in=interrupt_ids,
                                        run__status=ChatRun.Status.FAILED).only("pk", "run_id")
    for row in rows:
        if not Checkpoint.objects.filter(thread_id=thread.pk, run_id=str(row.run_id)).exists():
            ChatInterrupt.objects.filter(pk=row.pk, run_id=row.run_id).update(answered_at=None, response=None, run=None)


def run_orphan_reason(*, run: ChatRun) -> str | None:
    """Why the process executing `run` is known to be gone (the error to fail it with), or None when it may live.

    Gone: its process on this host no longer exists, its heartbeat is older than CHAT_RUN_STALE_SECONDS, or a cancel
    was requested CANCEL_ACK_SECONDS ago and it never acknowledged it (a live process does within a second).
    """
    now = timezone.now()
    if run.worker_instance and process_identity.instance_state(run.worker_instance) == "gone":
        return f"The server process executing this run ({run.worker}) stopped before it finished."
    if run.heartbeat_at < now - timedelta(seconds=settings.CHAT_RUN_STALE_SECONDS):
        return DEAD_RUN_ERROR
    requested = run.cancel_requested_at
    if requested is not None and run.heartbeat_at < requested and now - requested > timedelta(
            seconds=CANCEL_ACK_SECONDS):
        return (f"The server process executing this run ({run.worker}) did not answer the cancel request within "
                f"{CANCEL_ACK_SECONDS:g} seconds: it is no longer running it.")
    return None


def run_end_if_orphaned(*, run_id: uuid.UUID | str) -> tuple[str | None, int | None]:
    """Fail the run if its process is gone (see run_orphan_reason): (its status, the new last seq when failed)."""
    run = ChatRun.objects.filter(pk=run_id).first()
    if run is None or run.status != ChatRun.Status.RUNNING:
        return (run.status if run else None), None
    reason = run_orphan_reason(run=run)
    if reason is None:
        return run.status, None
    last_seq = run_fail_dead(run=run, error=reason)
    return ChatRun.Status.FAILED, last_seq


def runs_fail_after_restart(*, identity: str, instance: str) -> list[tuple[str, int]]:
    """Fail the runs a dead predecessor under this process's stable identity left running: (thread, last seq).

    A run of an instance that is still alive on this host is left alone (two processes were given one identity: a
    misconfiguration, logged); one of another host is the predecessor's, as the identity is this process's alone.
    """
    failed = []
    for run in ChatRun.objects.filter(worker=identity, status=ChatRun.Status.RUNNING).exclude(
            worker_instance=instance):
        if process_identity.instance_state(run.worker_instance) == "alive":
            log.error("run %s belongs to %s, which is alive although this process (%s) has the same identity %s",
                      run.pk, run.worker_instance, instance, identity)
            continue
        last_seq = run_fail_dead(run=run, error=RESTARTED_ERROR, retry=True)
        if last_seq is not None:
            failed.append((run.thread_id, last_seq))
    return failed


def run_heartbeat(*, run_id: uuid.UUID | str, beat: bool) -> tuple[bool, bool]:
    """Refresh the run's heartbeat (when `beat`, or to acknowledge a cancel); return (cancel requested, active)."""
    if beat:
        ChatRun.objects.filter(pk=run_id, status=ChatRun.Status.RUNNING).update(heartbeat_at=timezone.now())
    row = ChatRun.objects.filter(pk=run_id).values_list("cancel_requested_at", "status", "heartbeat_at").first()
    if row is None:
        return True, False
    requested, status, heartbeat_at = row
    if requested is not None and heartbeat_at < requested:
        # The acknowledgement tells a canceller that this process is alive and stopping the run. Never before the
        # request itself, whatever this host's clock says.
        ChatRun.objects.filter(pk=run_id, status=ChatRun.Status.RUNNING).update(
            heartbeat_at=max(timezone.now(), requested))
    return requested is not None, status == ChatRun.Status.RUNNING


def run_cancel_request(*, run: ChatRun, rollback: bool = False) -> ChatRun:
    """Ask the process executing the run to stop it (any process may ask).

    With `rollback` (the Agent Server's cancel action), the run and what it checkpointed are deleted when it stops.
    """
    if run.status != ChatRun.Status.RUNNING:
        return run
    fields: dict[str, Any] = {}
    if run.cancel_requested_at is None:
        fields["cancel_requested_at"] = run.cancel_requested_at = timezone.now()
    if rollback:
        fields["kwargs"] = run.kwargs = {**(run.kwargs or {}), ROLLBACK_KEY: True}
    if fields:
        ChatRun.objects.filter(pk=run.pk).update(**fields)
    return run


def run_roll_back(*, run_id: uuid.UUID | str) -> bool:
    """Delete a stopped run whose rollback was asked for, with its checkpoints and events; whether it was."""
    run = ChatRun.objects.filter(pk=run_id).only("kwargs", "thread_id").first()
    if run is None or not (run.kwargs or {}).get(ROLLBACK_KEY):
        return False
    from chat.checkpointer.saver import get_checkpointer

    get_checkpointer().delete_for_runs([str(run_id)])
    run.delete()
    return True


def run_cancel_queued(*, run: ChatRun) -> bool:
    """End a run nobody claimed yet as interrupted, with the events its waiters expect; False if it was claimed."""
    if not ChatRun.objects.filter(pk=run.pk, status=ChatRun.Status.PENDING).update(
            status=ChatRun.Status.INTERRUPTED, finished_at=timezone.now(), updated_at=timezone.now()):
        return False
    events_append(thread_id=run.thread_id, run_id=run.pk, events=policy(run.kind).cancelled_unclaimed(run))
    return True


def run_finish(*, run_id: uuid.UUID | str, status: str, error: str = "") -> bool:
    """Record how the run ended; False when it had already been ended (e.g. by the sweeper)."""
    return bool(ChatRun.objects.filter(pk=run_id, status=ChatRun.Status.RUNNING).update(
        status=status, error=error[:10000], finished_at=timezone.now(), updated_at=timezone.now()))


@transaction.atomic
def run_fail_dead(*, run: ChatRun, error: str = DEAD_RUN_ERROR, retry: bool = False) -> int | None:
    """Fail a run whose process died, with the root `failed` event clients wait for; the new last seq.

    With `retry` (its process died, nobody cancelled it), a queued run (the Agent Server's) that checkpointed nothing
    yet is put back in the queue instead, once.
    """
    retriable = retry and run.cancel_requested_at is None and policy(run.kind).retried_when_lost and run.attempt == 1
    if retriable and not run_made_progress(run=run):
        requeued = ChatRun.objects.filter(pk=run.pk, status=ChatRun.Status.RUNNING).update(
            status=ChatRun.Status.PENDING, attempt=2, worker="", worker_instance="", cancel_requested_at=None,
            updated_at=timezone.now())
        if requeued:
            # Its input is applied again by the retry: the checkpoints that recorded it go.
            from chat.checkpointer.saver import get_checkpointer

            get_checkpointer().delete_for_runs([str(run.pk)])
            log.warning("run %s of thread %s is queued again: its process (%s) stopped before checkpointing",
                        run.pk, run.thread_id, run.worker)
        return None
    if not run_finish(run_id=run.pk, status=ChatRun.Status.FAILED, error=error):
        return None
    log.warning("run %s of thread %s failed: its process (%s, %s) stopped", run.pk, run.thread_id, run.worker,
                run.worker_instance or "instance unknown")
    events: list[WireEvent | Frame] = [lifecycle_event([], "failed", graph_name="root", error=error),
                                       *policy(run.kind).lost(run, error)]
    return events_append(thread_id=run.thread_id, run_id=run.pk, events=events)[-1].seq


def run_made_progress(*, run: ChatRun) -> bool:
    """Whether a node of the run finished (then running it again would repeat what it did).

    A run checkpoints its input and the first step before any node runs; each finished step adds one, and a
    subgraph checkpoints under its own namespace.
    """
    checkpoints = Checkpoint.objects.filter(thread_id=run.thread_id, run_id=str(run.pk))
    return checkpoints.exclude(checkpoint_ns="").exists() or checkpoints.count() > 2


def runs_sweep_dead(*, stale_seconds: float) -> list[tuple[str, int]]:
    """Fail (or queue again, see run_fail_dead) every active run whose heartbeat is older than `stale_seconds` or
    whose process on this host has exited; (thread id, last seq) of each failed one."""
    limit = timezone.now() - timedelta(seconds=stale_seconds)
    swept = []
    for run in ChatRun.objects.filter(status=ChatRun.Status.RUNNING):
        gone = bool(run.worker_instance) and process_identity.instance_state(run.worker_instance) == "gone"
        if run.heartbeat_at >= limit and not gone:
            continue
        last_seq = run_fail_dead(run=run, retry=True)
        if last_seq is not None:
            swept.append((run.thread_id, last_seq))
    return swept


# --- Events --------------------------------------------------------------------------------------------------------
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


_chat_workspace_id: uuid.UUID | None = None


def chat_workspace_id() -> uuid.UUID:
    """CHAT_WORKSPACE's id (created when missing): where browser and anonymous threads are traced."""
    global _chat_workspace_id
    if _chat_workspace_id is None:
        from accounts.services import workspace_get_or_create

        _chat_workspace_id = workspace_get_or_create(name=settings.CHAT_WORKSPACE).id
    return _chat_workspace_id

"""Writes of chat runs: creating one (the only place a ChatRun row is made), admitting a protocol run, answering
interrupts, cancelling, finishing, and the sweeper of runs whose process died."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentruntime.events.frames import Frame
from agentruntime.events.records import WireEvent, lifecycle_event
from agentruntime.models import ChatInterrupt, ChatRun, ChatThread, Checkpoint
from agentruntime.runs.kinds import policy
from agentruntime.writes.event_log import events_append
from core import process_identity
from core.exceptions import Conflict

log = logging.getLogger("chat")
DEAD_RUN_ERROR = "The server process executing this run stopped before it finished."
RESTARTED_ERROR = ("The server process restarted before this run finished: the process executing it stopped "
                   "without ending it.")
# A live process acknowledges a cancel within its poll interval (0.5 s); one that has not after this long is gone.
CANCEL_ACK_SECONDS = 3.0
# In a run's kwargs: delete the run once it stopped (runs.cancel with action "rollback").
ROLLBACK_KEY = "rollback_on_stop"


class RunActive(Conflict):
    def __init__(self, run_id: uuid.UUID | str) -> None:
        self.run_id = run_id
        super().__init__(f"Run {run_id} is still active on this thread: cancel it or wait for it to finish "
                         f"before starting another.")


class InterruptAnswered(Exception):
    def __init__(self, interrupt_id: str) -> None:
        self.interrupt_id = interrupt_id
        super().__init__(f"Interrupt {interrupt_id} was already answered.")


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
    from agentruntime.checkpointer.saver import get_checkpointer

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
            from agentruntime.checkpointer.saver import get_checkpointer

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

"""Queued chat runs and the executor that claims them.

A chat run is a ChatRun row. The Agent Server API (agentserver/) creates its runs `pending`; so does run.start when
CHAT_RUN_EXECUTOR is "worker". An executor claims the oldest available pending run of a thread with no running run (the
database's one-running-run-per-thread constraint settles races between processes), marks it running under its
process's identity and executes it (agentruntime/runs/execution.py), at most CHAT_RUN_CONCURRENCY at once. The
heartbeat the executing task refreshes is the lease: a run whose executor died is retried once by the sweeper when
nothing of it was checkpointed, and failed otherwise (agentruntime/writes/run_records.py `run_fail_dead`).

Where executors run is a setting: with CHAT_RUN_EXECUTOR "web" (the embedded default) every server process runs
one, started by the first request it serves (`ExecutorStarter`); with "worker", only `run_worker` processes do
(`run_executor_until`), so web processes only accept and stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, connections, transaction
from django.utils import timezone

from agentruntime import db_executor
from agentruntime.access import owner_scope
from agentruntime.events import statements as event_sql
from agentruntime.events.hub import wait_event
from agentruntime.models import ChatRun, ChatThread
from agentruntime.runs.execution import RunRequest, runs
from agentruntime.writes.thread_records import chat_workspace_id
from core import process_identity

log = logging.getLogger("agentruntime.runs.queue")
CLAIM_CANDIDATES = 20


# --- Claiming (synchronous ORM code) ------------------------------------------------------------------------------
def _candidates_sql() -> str:
    # Written out rather than built by the ORM: the executor looks for work after every queued and every ended run,
    # and compiling this query cost more than running it. Only ids: most looks find runs it cannot take.
    run = ChatRun._meta.db_table
    return (f"SELECT r.id, r.thread_id FROM {run} r "
            f"WHERE r.status = %s AND (r.available_at IS NULL OR r.available_at <= %s) "
            # Not on a thread with a running run (the database allows one) ...
            f"AND NOT EXISTS (SELECT 1 FROM {run} b WHERE b.thread_id = r.thread_id AND b.status = %s) "
            # ... nor behind an older pending run of its thread (one waiting for its after_seconds holds back the
            # runs queued behind it: a thread's runs execute in the order they were created).
            f"AND NOT EXISTS (SELECT 1 FROM {run} o WHERE o.thread_id = r.thread_id AND o.status = %s "
            f"AND o.created_at < r.created_at) "
            f"ORDER BY r.created_at LIMIT %s")


_CANDIDATES_SQL = _candidates_sql()


def _claim_candidates(limit: int) -> list[tuple[uuid.UUID, str]]:
    """(run id, thread id) of the oldest claimable pending runs (a few more than `limit`: some may be taken)."""
    pending = ChatRun.Status.PENDING
    with connection.cursor() as cursor:
        cursor.execute(_CANDIDATES_SQL, [pending, connection.ops.adapt_datetimefield_value(timezone.now()),
                                         ChatRun.Status.RUNNING, pending, max(limit, CLAIM_CANDIDATES)])
        return [(uuid.UUID(str(run_id)), thread_id) for run_id, thread_id in cursor.fetchall()]


@dataclass(frozen=True)
class ThreadOwner:
    """Who owns a claimed run's thread (agentruntime.access.owner_scope's inputs): its workspace, if any, and its
    user."""

    kind: str
    workspace_id: uuid.UUID | None
    user_id: int | None


def runs_claim(*, limit: int) -> list[tuple[ChatRun, ThreadOwner]]:
    """Mark up to `limit` of the oldest claimable pending runs (one per thread) running for this process, in one
    transaction; those runs with their thread's owner, oldest first."""
    claimed: list[uuid.UUID] = []
    threads: set[str] = set()
    candidates = _claim_candidates(limit)
    if not candidates:
        return []
    with transaction.atomic():
        for run_id, thread_id in candidates:
            if len(claimed) >= limit:
                break
            if thread_id in threads:
                continue  # two runs of a thread created at the same instant
            try:
                with transaction.atomic():
                    updated = ChatRun.objects.filter(pk=run_id, status=ChatRun.Status.PENDING).update(
                        status=ChatRun.Status.RUNNING, worker=process_identity.identity(),
                        worker_instance=process_identity.instance(), heartbeat_at=timezone.now(),
                        updated_at=timezone.now())
            except IntegrityError:
                continue  # another process started a run on this thread meanwhile
            if updated:
                claimed.append(run_id)
                threads.add(thread_id)
    if not claimed:
        return []
    # Written out: the ORM's select_related compiled for longer than the claim took.
    sql = (f"SELECT r.*, t.workspace_id AS thread_workspace_id, t.owner_kind AS thread_owner_kind, "
           f"t.user_id AS thread_user_id FROM {ChatRun._meta.db_table} r "
           f"JOIN {ChatThread._meta.db_table} t ON t.id = r.thread_id "
           f"WHERE r.id IN ({', '.join(['%s'] * len(claimed))}) ORDER BY r.created_at")
    runs = ChatRun.objects.raw(sql, [event_sql.run_id_value(run_id) for run_id in claimed])
    return [(run, _owner(run)) for run in runs]


def _owner(run: ChatRun) -> ThreadOwner:
    # The thread's columns the claim's join added to the run (raw SQL: not model fields).
    return ThreadOwner(kind=run.thread_owner_kind, workspace_id=_workspace_id(run.thread_workspace_id),  # type: ignore[attr-defined]
                       user_id=run.thread_user_id)  # type: ignore[attr-defined]


def _workspace_id(value) -> uuid.UUID | None:
    # SQLite holds a uuid as 32 hex digits, PostgreSQL as a uuid.
    return None if value is None else uuid.UUID(str(value))


def request_for(run: ChatRun, owner: ThreadOwner) -> RunRequest:
    """What the runner needs to execute a claimed run of a thread of this owner."""
    kwargs = run.kwargs or {}
    workspace_id = owner.workspace_id or chat_workspace_id()
    return RunRequest(thread_id=run.thread_id, run_id=run.pk, input=kwargs.get("input"),
                      checkpoint_id=(kwargs.get("checkpoint") or {}).get("checkpoint_id"),
                      metadata=run.metadata or {}, tracing_workspace_id=workspace_id,
                      graph_name=run.graph_name or None, kind=run.kind, kwargs=kwargs, attempt=run.attempt,
                      store_scope=owner_scope(owner.kind, owner.workspace_id, owner.user_id))


def claim_requests(*, limit: int) -> list[RunRequest]:
    """Claim up to `limit` runs (runs_claim) and say how to execute them, in one hop of the database threads."""
    return [request_for(run, owner) for run, owner in runs_claim(limit=limit)]


# --- The executor (one per process and event loop) ----------------------------------------------------------------
class Executor:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task | None = None
        self._wake: asyncio.Event | None = None

    def ensure_running(self) -> asyncio.Task:
        """Start this process's executor on the running event loop (idempotent); its task."""
        loop = asyncio.get_running_loop()
        if self.task is not None and not self.task.done() and self.loop is loop:
            return self.task
        wake = asyncio.Event()
        self.loop, self._wake = loop, wake
        self.task = task = loop.create_task(self._loop(wake), name="chat-run-executor")
        return task

    def notify(self) -> None:
        """A run was queued or ended: look for work now (from any thread)."""
        loop, wake = self.loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)

    async def _loop(self, wake: asyncio.Event) -> None:
        failing = False
        while True:
            try:
                await self._claim_and_start()
                failing = False
            except asyncio.CancelledError:
                raise
            except Exception:
                if not failing:
                    log.warning("claiming queued runs failed; retrying", exc_info=True)
                failing = True
            await wait_event(wake, settings.CHAT_QUEUE_POLL_SECONDS)
            wake.clear()

    async def _claim_and_start(self) -> None:
        while (room := settings.CHAT_RUN_CONCURRENCY - len(runs.tasks)) > 0:
            requests = await db_executor.run(claim_requests, limit=room)
            for request in requests:
                runs.start(request)
            if len(requests) < room:
                return  # nothing more to claim now: the next queued or ended run wakes the executor


executor = Executor()
runs.on_end.append(executor.notify)


def executes_here() -> bool:
    """Whether this server process executes runs (CHAT_RUN_EXECUTOR "web"), rather than run_worker."""
    return settings.CHAT_RUN_EXECUTOR == "web"


def notify_executors() -> None:
    """Tell this process's executor that a run was queued (other processes find it within their poll interval)."""
    executor.notify()


class ExecutorStarter:
    """ASGI middleware starting the process's executor on the server's event loop with its first request."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and executes_here():
            executor.ensure_running()
        return await self.app(scope, receive, send)


def run_executor_until(stop: threading.Event) -> None:
    """`run_worker`'s executor (CHAT_RUN_EXECUTOR "worker"): claim and execute runs until `stop` is set."""
    async def main() -> None:
        executor_task = executor.ensure_running()
        while not stop.is_set():
            await asyncio.sleep(0.2)
        executor_task.cancel()
        for task in list(runs.tasks.values()):
            task.cancel()
        await asyncio.gather(executor_task, *runs.tasks.values(), return_exceptions=True)

    log.info("run executor started (concurrency %d)", settings.CHAT_RUN_CONCURRENCY)
    try:
        asyncio.run(main())
    finally:
        db_executor.close_connections()
        connections.close_all()

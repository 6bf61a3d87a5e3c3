"""Queued chat runs and the executor that claims them.

A chat run is a ChatRun row. The Agent Server API (agentserver/) creates its runs `pending`; so does run.start when
CHAT_RUN_EXECUTOR is "worker". An executor claims the oldest available pending run of a thread with no running run (the
database's one-running-run-per-thread constraint settles races between processes), marks it running under its process's
identity and executes it (chat/run_execution.py), at most CHAT_RUN_CONCURRENCY at once. The heartbeat the executing task
refreshes is the lease: a run whose executor died is retried once by the sweeper when nothing of it was checkpointed,
and failed otherwise (chat/services.py `run_fail_dead`).

Where executors run is a setting: with CHAT_RUN_EXECUTOR "web" (the embedded default) every server process runs
one, started by the first request it serves (`ExecutorStarter`); with "worker", only `run_worker` processes do
(`run_executor_until`), so web processes only accept and stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from chat import db_executor, services
from chat.access import owner_scope
from chat.hub import wait_event
from chat.models import ChatRun, ChatThread
from chat.run_execution import RunRequest, runs
from core import processes

log = logging.getLogger("chat.run_queue")
CLAIM_CANDIDATES = 20


# --- Claiming (synchronous ORM code) ------------------------------------------------------------------------------
def run_claim_next() -> ChatRun | None:
    """Mark the oldest claimable pending run running for this process and return it (None: nothing to claim)."""
    now = timezone.now()
    busy = ChatRun.objects.filter(status=ChatRun.Status.RUNNING).values("thread_id")
    # Only ids: the executor looks for work after every queued and every ended run, and most looks find runs it
    # cannot take; decoding their JSON columns each time would cost more than the claim.
    candidates = (ChatRun.objects.filter(status=ChatRun.Status.PENDING)
                  .filter(Q(available_at__isnull=True) | Q(available_at__lte=now))
                  .exclude(thread_id__in=busy).order_by("created_at").values_list("pk", "thread_id", "created_at")
                  [:CLAIM_CANDIDATES])
    seen: set[str] = set()
    for run_id, thread_id, created_at in candidates:
        if thread_id in seen:
            continue
        seen.add(thread_id)
        # A thread's runs execute in the order they were created: an older run waiting for its after_seconds holds
        # back the ones queued behind it.
        if ChatRun.objects.filter(thread_id=thread_id, status=ChatRun.Status.PENDING,
                                  created_at__lt=created_at).exists():
            continue
        try:
            with transaction.atomic():
                claimed = ChatRun.objects.filter(pk=run_id, status=ChatRun.Status.PENDING).update(
                    status=ChatRun.Status.RUNNING, worker=processes.identity(),
                    worker_instance=processes.instance(), heartbeat_at=timezone.now(), updated_at=timezone.now())
        except IntegrityError:
            continue  # another process started a run on this thread meanwhile
        if claimed:
            return ChatRun.objects.get(pk=run_id)
    return None


def request_for(run: ChatRun) -> RunRequest:
    """What the runner needs to execute a claimed run."""
    thread = ChatThread.objects.only("owner_kind", "workspace_id", "user_id").get(pk=run.thread_id)
    kwargs = run.kwargs or {}
    workspace_id = thread.workspace_id or services.chat_workspace_id()
    return RunRequest(thread_id=run.thread_id, run_id=run.pk, input=kwargs.get("input"),
                      checkpoint_id=(kwargs.get("checkpoint") or {}).get("checkpoint_id"),
                      metadata=run.metadata or {}, tracing_workspace_id=workspace_id,
                      graph_name=run.graph_name or None, kind=run.kind, kwargs=kwargs, attempt=run.attempt,
                      store_scope=owner_scope(thread.owner_kind, thread.workspace_id, thread.user_id))


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
        while len(runs.tasks) < settings.CHAT_RUN_CONCURRENCY:
            run = await db_executor.run(run_claim_next)
            if run is None:
                return
            request = await db_executor.run(request_for, run)
            runs.start(request)


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

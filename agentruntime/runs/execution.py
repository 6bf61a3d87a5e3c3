"""Executing a chat run: the graph's v3 stream, converted, stored in batches, announced, watched for cancellation.

A chat run (a ChatRun row; not a trace run of the tracing app, nor an export run) executes as an asyncio task of the
server process that accepted `run.start`. It stores a root `running` event, the converted graph events, and a terminal
root event (`completed`, `failed` with the error, or `interrupted`) in the same transaction that ends the run, so a
client that sees the end can start the next run at once. While it runs, a watcher refreshes the run's heartbeat (the
sweeper fails runs whose process died) and polls the cancel flag, so a cancel reaching any process stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connections, transaction
from django.utils.module_loading import import_string
from langchain_core._api.beta_decorator import LangChainBetaWarning

from agentruntime import db_executor
from agentruntime.events.frames import Frame
from agentruntime.events.hub import hubs, publish, publish_unstored, wait_event
from agentruntime.events.records import StoredEvent, WireEvent, lifecycle_event
from agentruntime.models import ChatRun
from agentruntime.reads import thread_cursor_state
from agentruntime.runs.kinds import RunKindPolicy, policy
from agentruntime.served_graphs import ConfigurationError, ServedGraph, get_served_graph
from agentruntime.store.config import store_for
from agentruntime.writes.event_log import RunEnded, events_append, events_enforce_retention
from agentruntime.writes.run_records import run_finish, run_heartbeat, run_roll_back, runs_fail_after_restart
from core import process_identity
from core.exceptions import NotFound

log = logging.getLogger("agentruntime.runs.execution")
# astream_events(version="v3") is marked experimental; the warning would be logged on every run.
warnings.filterwarnings("ignore", category=LangChainBetaWarning)

MAX_BATCH = 1000
CANCEL_POLL_SECONDS = 0.5
# A run whose end could not be stored (full disk) retries, backing off up to this delay, for at most this long.
END_RETRY_MAX_DELAY_SECONDS = 5.0
END_RETRY_MAX_SECONDS = 3600.0


@dataclass
class RunRequest:
    thread_id: str
    run_id: uuid.UUID
    input: Any
    checkpoint_id: str | None = None
    metadata: dict = field(default_factory=dict)
    tracing_workspace_id: Any = None
    # The served graph to run, by name (None: the first one).
    graph_name: str | None = None
    # ChatRun.Kind: the policy its app registered (agentruntime/runs/kinds.py) says how the run streams its graph.
    kind: str = ChatRun.Kind.PROTOCOL
    # The Agent Server's run kwargs (ChatRun.kwargs) and the attempt number.
    kwargs: dict = field(default_factory=dict)
    attempt: int = 1
    # The thread owner's store (owner_scope of agentruntime/store/django_store.py), which the graph gets; None: the
    # graph keeps its own.
    store_scope: str | None = None


class EventWriter:
    """Stores a run's events in batches (whatever accumulated while the last batch was written), then wakes readers.

    A batch that cannot be stored (a full disk) stops the run at once through `on_error`: a run whose events are
    lost must not go on as if they were seen. With `hold_first`, the first batch waits up to that long for
    `release()` (the graph's first output), so that the run's opening events are not a transaction of their own.
    """

    def __init__(self, thread_id: str, run_id: uuid.UUID, on_error=None, hold_first: float = 0.0):
        self.thread_id, self.run_id = thread_id, run_id
        self._released = asyncio.Event()
        self._hold = hold_first
        if not hold_first:
            self._released.set()
        self.buffer: list[WireEvent | Frame] = []
        self.error: BaseException | None = None
        self.last_seq: int | None = None
        self._on_error = on_error
        self.stop_run_on_error = True
        self._more = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._loop(), name=f"chat-writer:{run_id}")

    def add(self, events: Sequence[WireEvent | Frame]) -> None:
        if events:
            self.buffer.extend(events)
            self._more.set()

    def release(self) -> None:
        """Start writing (what `hold_first` waits for)."""
        self._released.set()

    async def close(self) -> None:
        """Store everything added so far."""
        self._closing = True
        self._released.set()
        self._more.set()
        await self._task
        if self.error:
            raise self.error

    async def _loop(self) -> None:
        await wait_event(self._released, self._hold)
        while True:
            if not self.buffer:
                if self._closing:
                    return
                await self._more.wait()
                self._more.clear()
                continue
            batch, self.buffer = self.buffer[:MAX_BATCH], self.buffer[MAX_BATCH:]
            try:
                stored = await db_executor.run(events_append, thread_id=self.thread_id,
                                               run_id=self.run_id, events=batch, active_only=True)
            except Exception as exc:
                self.error = exc
                self.buffer = []
                if not isinstance(exc, RunEnded):
                    log.error("events of run %s could not be stored (%s: %s); ending the run", self.run_id,
                              type(exc).__name__, exc)
                if self._on_error is not None and self.stop_run_on_error:
                    self._on_error()
                return
            self.last_seq = stored[-1].seq
            # Subscribers of this process get the stored events at once; other processes are woken up.
            hubs.deliver(self.thread_id, stored)
            await publish(self.thread_id, stored[-1].seq)


class RunRegistry:
    """The runs executing in this process, so a cancel arriving here stops them at once."""

    def __init__(self) -> None:
        self.tasks: dict[str, asyncio.Task] = {}
        # Called whenever a run of this process ends (the executor then looks for the thread's next queued run).
        self.on_end: list = []

    def start(self, request: RunRequest) -> asyncio.Task:
        task = asyncio.create_task(execute_run(request), name=f"chat-run:{request.run_id}")
        key = str(request.run_id)
        self.tasks[key] = task
        task.add_done_callback(lambda _: self._ended(key))
        return task

    def _ended(self, key: str) -> None:
        self.tasks.pop(key, None)
        for callback in self.on_end:
            callback()

    def cancel(self, run_id) -> bool:
        task = self.tasks.get(str(run_id))
        if task is None or task.done():
            return False
        task.cancel()
        return True


runs = RunRegistry()


async def execute_run(request: RunRequest) -> str:
    """Run the requested served graph for one `run.start`; return the final status."""
    task = asyncio.current_task()
    if task is None:  # the run registry cancels a run through its task
        raise RuntimeError("execute_run runs in a task of its own")
    kind = policy(request.kind)
    writer = EventWriter(request.thread_id, request.run_id, on_error=task.cancel, hold_first=kind.hold_first)
    watcher = asyncio.create_task(_watch(request.run_id, task))
    callbacks = tracing_callbacks(request.tracing_workspace_id)
    status: str = ChatRun.Status.COMPLETED
    error, graph_name, started = "", "root", False
    try:
        served = with_store(get_served_graph(request.graph_name), request.store_scope)
        graph_name = served.name
        writer.add([lifecycle_event([], "running", graph_name=graph_name)])
        started = True
        status = await stream_of(kind)(served, request, writer, callbacks)
    except asyncio.CancelledError:
        task.uncancel()
        status = ChatRun.Status.INTERRUPTED
    except Exception as exc:
        if exc is not writer.error:
            log.warning("run %s of thread %s failed: %s: %s", request.run_id, request.thread_id,
                        type(exc).__name__, exc)
            # A configuration error is a sentence for the user; any other error gets its type name.
            plain = isinstance(exc, ConfigurationError)
            status, error = ChatRun.Status.FAILED, str(exc) if plain else f"{type(exc).__name__}: {exc}"
            writer.add(kind.failed(request.run_id, exc))
    finally:
        watcher.cancel()
    if writer.error is not None and not isinstance(writer.error, RunEnded):
        status, error = ChatRun.Status.FAILED, store_error(writer.error)
    if not started:
        # Clients wait for `running` then one terminal event, even when the graph could not be built.
        writer.add([lifecycle_event([], "running", graph_name=graph_name)])
    writer.stop_run_on_error = False
    # Shielded: a second cancel while the end is being recorded must not leave the run open.
    status = await asyncio.shield(_finish(request, writer, status, error, graph_name))
    for path in kind.after_run:
        asyncio.create_task(_after_run(path, request, status), name=f"chat-after-run:{request.run_id}")
    return status


@functools.cache
def _stream_function(path: str) -> Callable[..., Awaitable[str]]:
    return import_string(path.replace(":", "."))


def stream_of(kind: RunKindPolicy) -> Callable[..., Awaitable[str]]:
    """How runs of this kind stream their graph (RunKindPolicy.stream), imported once per process."""
    return _stream_function(kind.stream)


def with_store(served: ServedGraph, scope: str | None) -> ServedGraph:
    """The served graph bound to the owner's store, for one run: its `store` argument, get_store() and
    runtime.store, in its subgraphs too. A copy: the served graph is shared by every owner's runs."""
    if scope is None:
        return served
    return replace(served, graph=served.graph.copy(update={"store": store_for(scope)}))


async def _after_run(path: str, request: RunRequest, status: str) -> None:
    try:
        await import_string(path)(request, status)
    except Exception:
        log.warning("after-run hook %s of run %s failed", path, request.run_id, exc_info=True)


async def _finish(request: RunRequest, writer: EventWriter, status: str, error: str, graph_name: str) -> str:
    try:
        await writer.close()
    except RunEnded:
        pass  # another process ended the run: _end_run below finds it ended
    except Exception as exc:
        status, error = ChatRun.Status.FAILED, store_error(exc)
    # One terminal event, whether subscribers get it from the store or, first, from memory; then, for an Agent
    # Server run, the end of its frames.
    terminal: list[WireEvent | Frame] = [lifecycle_event([], status, graph_name=graph_name, error=error or None),
                                         *policy(request.kind).closing(request.run_id)]
    try:
        last = await db_executor.run(_end_run, request=request, status=status, error=error, terminal=terminal)
    except Exception as exc:
        log.error("could not record the end of run %s (%s: %s); its subscribers are told from memory and the end "
                  "is recorded once the store accepts it", request.run_id, type(exc).__name__, exc)
        await _announce_unstored_end(request, writer, terminal)
        return await _record_end_later(request, status, error, terminal)
    if last is not None:
        hubs.deliver(request.thread_id, last)
        await publish(request.thread_id, last[-1].seq)
    if not request.kwargs.get("temporary"):  # a stateless run's thread has this one run, which retention keeps
        with contextlib.suppress(Exception):
            await db_executor.run(events_enforce_retention, thread_id=request.thread_id)
    return status


def store_error(exc: BaseException) -> str:
    return f"The run's events could not be stored ({type(exc).__name__}: {exc}); the run was stopped."


async def _announce_unstored_end(request: RunRequest, writer: EventWriter, terminal: list) -> None:
    """Give the run's subscribers its terminal event from memory, under the seq it will most likely be stored at."""
    try:
        state = await db_executor.run(thread_cursor_state, thread_id=request.thread_id)
        last_seq = state[0] if state else writer.last_seq
    except Exception:
        last_seq = writer.last_seq
    if last_seq is None:
        log.error("run %s: the thread's last event is unknown; its subscribers get no terminal event",
                  request.run_id)
        return
    events = [StoredEvent(last_seq + 1 + i, event.channel, tuple(event.namespace), event.encode(last_seq + 1 + i))
              for i, event in enumerate(terminal)]
    hubs.deliver_unstored(request.thread_id, events)
    await publish_unstored(request.thread_id, events)


async def _record_end_later(request: RunRequest, status: str, error: str, terminal: list) -> str:
    """Retry recording the run's end (and storing its terminal event) until the store accepts it."""
    delay, deadline = 0.5, time.monotonic() + END_RETRY_MAX_SECONDS
    while time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, END_RETRY_MAX_DELAY_SECONDS)
        try:
            last = await db_executor.run(_end_run, request=request, status=status, error=error, terminal=terminal)
        except NotFound:
            return status  # the thread was deleted meanwhile
        except Exception:
            continue
        if last is not None:
            log.info("the end of run %s is recorded", request.run_id)
            hubs.deliver(request.thread_id, last)
            await publish(request.thread_id, last[-1].seq)
        return status
    log.error("gave up recording the end of run %s; the sweeper will fail it", request.run_id)
    return status


@transaction.atomic
def _end_run(*, request: RunRequest, status: str, error: str, terminal: list) -> list | None:
    # The run ends and its terminal event is stored together: whoever sees the event may start the next run.
    if status == ChatRun.Status.INTERRUPTED and run_roll_back(run_id=request.run_id):
        return None
    if not run_finish(run_id=request.run_id, status=status, error=error):
        return None
    return events_append(thread_id=request.thread_id, run_id=request.run_id, events=terminal)


async def _watch(run_id: uuid.UUID, target: asyncio.Task) -> None:
    """Keep the heartbeat fresh; cancel the run when its cancel flag is set or the run was failed meanwhile."""
    last_beat, failing = 0.0, False
    while True:
        await asyncio.sleep(CANCEL_POLL_SECONDS)
        beat = time.monotonic() - last_beat >= settings.CHAT_RUN_HEARTBEAT_SECONDS
        try:
            cancel, active = await db_executor.run(run_heartbeat, run_id=run_id, beat=beat)
        except Exception:
            # Once per spell of failures (a full disk would otherwise log twice a second).
            if not failing:
                log.warning("heartbeat of run %s failed", run_id, exc_info=True)
            failing = True
            continue
        if failing:
            log.info("heartbeat of run %s works again", run_id)
            failing = False
        if beat:
            last_beat = time.monotonic()
        if cancel or not active:
            target.cancel()
            return


def fail_runs_of_predecessor() -> int:
    """Before this process serves: fail the runs its dead predecessor (same stable identity) left running.

    Only a process with a stable identity (PROCESS_IDENTITY, set by `serve`) has a predecessor; for any other, the
    sweeper fails what a dead process left behind. Never raises: a database that cannot be reached now leaves the
    runs to the sweeper. Returns how many runs were failed.
    """
    if not process_identity.is_stable():
        return 0
    try:
        failed = runs_fail_after_restart(identity=process_identity.identity(),
                                                  instance=process_identity.instance())
    except Exception:
        log.warning("could not fail the runs left by this process's predecessor; the sweeper will", exc_info=True)
        return 0
    finally:
        # This runs before the event loop does, on what becomes its thread: leave no connection behind.
        connections.close_all()
    for thread_id, seq in failed:
        with contextlib.suppress(Exception):
            async_to_sync(publish)(thread_id, seq)
    if failed:
        log.warning("failed %d run(s) left running by the previous %s", len(failed), process_identity.identity())
    return len(failed)


def tracing_callbacks(workspace_id) -> list:
    """The trace store's tracer for a chat run in `workspace_id`, which records it as trace runs in
    CHAT_TRACING_PROJECT (no tracer when that is empty).

    Never an error: tracing must not break a run.
    """
    if workspace_id is None or not settings.CHAT_TRACING_PROJECT:
        return []
    try:
        from tracing.tracer import StoreTracer

        return [StoreTracer(workspace_id=workspace_id, project_name=settings.CHAT_TRACING_PROJECT)]
    except Exception:
        log.warning("tracing is unavailable for chat runs", exc_info=True)
        return []

"""Starting a run on a chat thread for the protocol's commands (`run.start`, `state.fork`, `input.respond`), and the
command error they raise (chat/protocol_commands.py renders it as the protocol's error envelope)."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid

from agentruntime import db_executor, reads
from agentruntime.access import owner_scope
from agentruntime.models import ChatRun
from agentruntime.runs import control as run_control
from agentruntime.runs import queue as run_queue
from agentruntime.runs.execution import RunRequest, runs
from agentruntime.served_graphs import get_served_graph, graph_name_for
from agentruntime.writes.run_records import (
    InterruptAnswered,
    RunActive,
    run_create_answering,
    run_register,
)
from agentruntime.writes.thread_records import chat_workspace_id, thread_touch

# How long a run.start waits for a run whose cancel was already requested to end before refusing. The JS client's
# stop() cancels without waiting (202) and may start the next run at once; a cancelled run ends within about a
# second (the cancel flag is polled every 0.5 s by the process executing it), or is ended here once its process is
# known to be gone (at the latest CANCEL_ACK_SECONDS after the cancel: agentruntime.runs.control).
CANCELLED_RUN_WAIT_SECONDS = 5.0


class CommandError(Exception):
    def __init__(self, code: str, message: str):
        self.code, self.message = code, message
        super().__init__(message)


async def start_run(thread, run_input: dict | None, *, checkpoint_id: str | None, metadata: dict,
                    assistant_id: str | None = None, config: dict | None = None, command: dict | None = None,
                    answering: dict | None = None) -> uuid.UUID:
    """Register and launch a run on `thread` of the graph `assistant_id` names (else the thread's own graph, else
    the first served graph); its events go to the thread's log.

    A resume passes its `command` and `answering` (the answered interrupts' ids → their namespaces): they are claimed
    with the run's registration, once (run_create_answering).
    """
    graph_name = graph_name_for(assistant_id, current=thread.graph_name)
    if checkpoint_id:
        served = get_served_graph(graph_name)
        found = await served.saver.aget_tuple(
            {"configurable": {"thread_id": thread.id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}})
        if found is None:
            raise CommandError("no_such_checkpoint", f"Checkpoint {checkpoint_id} not found in thread {thread.id}.")
    run_id = uuid.uuid4()
    kwargs = {key: value for key, value in (("config", config), ("command", command)) if value}
    # Executed here (CHAT_RUN_EXECUTOR "web"), or queued for run_worker's executors.
    queue = None if run_queue.executes_here() else {
        "graph_name": graph_name, "metadata": metadata,
        "kwargs": {"input": run_input, "checkpoint": {"checkpoint_id": checkpoint_id} if checkpoint_id else None,
                   **kwargs}}
    create = run_register if answering is None else functools.partial(
        run_create_answering, answers=(command or {}).get("resume") or {}, namespaces=answering)
    await _create_run(thread, run_id, queue, create)
    await db_executor.run(thread_touch, thread=thread, messages=(run_input or {}).get("messages"),
                          graph_name=graph_name)
    if queue is not None:
        return run_id
    workspace_id = thread.workspace_id or await db_executor.run(chat_workspace_id)
    runs.start(RunRequest(thread_id=thread.id, run_id=run_id, input=run_input, checkpoint_id=checkpoint_id,
                          metadata=metadata, tracing_workspace_id=workspace_id, graph_name=graph_name, kwargs=kwargs,
                          store_scope=owner_scope(thread.owner_kind, thread.workspace_id, thread.user_id)))
    return run_id


async def _create_run(thread, run_id: uuid.UUID, queue: dict | None, create) -> None:
    """Register the run; an active run whose cancel was requested is first given a moment to end."""
    try:
        await _create(create, thread, run_id, queue)
        return
    except RunActive as exc:
        if not await _cancelled_run_ended(exc.run_id):
            raise CommandError("invalid_argument", exc.detail) from None
    try:
        await _create(create, thread, run_id, queue)
    except RunActive as exc:
        raise CommandError("invalid_argument", exc.detail) from None


async def _create(create, thread, run_id: uuid.UUID, queue: dict | None) -> None:
    try:
        await db_executor.run(create, thread=thread, run_id=run_id, queue=queue)
    except InterruptAnswered as exc:
        raise CommandError("no_such_interrupt", f"{exc} An interrupt is answered once.") from None


async def _cancelled_run_ended(run_id) -> bool:
    """Wait (bounded) for an active run to end, if and only if its cancel was requested; whether it ended.

    A cancelled run whose process is gone is ended here (run_orphan_reason).
    """
    deadline = time.monotonic() + CANCELLED_RUN_WAIT_SECONDS
    while True:
        state = await db_executor.run(reads.run_cancel_state, run_id=run_id)
        if state is None or state[0] != ChatRun.Status.RUNNING:
            return True
        if not state[1] or time.monotonic() >= deadline:
            return False
        if await run_control.run_fail_if_orphaned(run_id=run_id) != ChatRun.Status.RUNNING:
            return True
        await asyncio.sleep(0.05)

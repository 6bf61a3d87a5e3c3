"""Stopping chat runs from async code: the Agent Server's cancel and thread delete, and the protocol's run.start
(which waits for a cancelled chat run to end before starting the next).

A chat run is executed by one process (agentruntime/runs/execution.py); any process can ask it to stop through the run's
cancel flag, and stops it at once when it is the one executing it. A chat run whose process is gone cannot stop
itself: it is failed here as soon as that is known (run_orphan_reason).
"""

from __future__ import annotations

import asyncio
import time

from agentruntime import db_executor, reads
from agentruntime.events.hub import publish
from agentruntime.models import ChatRun
from agentruntime.runs.execution import runs
from agentruntime.writes.run_records import run_cancel_request, run_end_if_orphaned

STOP_WAIT_SECONDS = 5.0


async def run_stop(*, run: ChatRun, wait: bool = True) -> str:
    """Set the chat run's cancel flag (seen by whichever process executes it) and stop it here at once if it runs
    here; its status once ended, or after STOP_WAIT_SECONDS (at once without `wait`): "deleted" when it is gone."""
    await db_executor.run(run_cancel_request, run=run)
    runs.cancel(run.id)
    deadline = time.monotonic() + (STOP_WAIT_SECONDS if wait else 0)
    while True:
        status = await run_fail_if_orphaned(run_id=run.pk)
        if status != ChatRun.Status.RUNNING or time.monotonic() >= deadline:
            return status or "deleted"
        await asyncio.sleep(0.1)


async def run_fail_if_orphaned(*, run_id) -> str | None:
    """Fail the chat run if the process executing it is gone, and tell its thread's subscribers; its status."""
    status, last_seq = await db_executor.run(run_end_if_orphaned, run_id=run_id)
    if last_seq is not None:
        thread_id = await db_executor.run(reads.run_thread_id, run_id=run_id)
        if thread_id is not None:
            await publish(thread_id, last_seq)
    return status

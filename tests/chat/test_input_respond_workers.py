"""input.respond with CHAT_RUN_EXECUTOR "worker": the web process accepts the answer and queues the resuming run,
a `run_worker` process executes it with the answered Command."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.chat.support_chat import (
    CHAT_ENV,
    TERMINAL,
    command,
    live_chat_server,
    new_thread,
    start_run,
    wait_for_run_end,
)

pytestmark = pytest.mark.live
WORKER_ENV = {"CHAT_RUN_EXECUTOR": "worker", "CHAT_QUEUE_POLL_SECONDS": "0.2", "CHAT_APPROVE_TOOLS": "calculator"}
web = live_chat_server(**WORKER_ENV)


def ended(base: str, thread: str) -> str:
    """The newest run's status once it ended (a queued run is `pending` until a worker claims it)."""
    for _ in range(600):
        status = wait_for_run_end(base, thread)["status"]
        if status in TERMINAL:
            return status
        time.sleep(0.05)
    raise TimeoutError("the run did not end")


def test_an_answer_queued_by_the_web_process_is_executed_by_a_worker(web, start_process):
    start_process("run_worker", env={**CHAT_ENV, **WORKER_ENV})
    thread = new_thread()
    start_run(web.url, thread, "Calculate 42 * 17")
    assert ended(web.url, thread) == "interrupted"
    (interrupt,) = httpx.get(f"{web.url}/api/threads/{thread}/state").json()["interrupts"]
    answered = command(web.url, thread, "input.respond", {
        "interrupt_id": interrupt["id"], "response": {"decisions": [{"type": "approve"}]}}).json()
    assert answered["type"] == "success", answered
    assert ended(web.url, thread) == "completed"
    message = command(web.url, thread, "state.get").json()["result"]["values"]["messages"][-1]
    assert "42 * 17 = 714" in " ".join(b.get("text", "") for b in message["content"])

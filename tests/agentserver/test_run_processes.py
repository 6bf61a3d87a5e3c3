"""One runtime, several processes: with CHAT_RUN_EXECUTOR "worker", two web processes only accept and stream, and
two `run_worker` processes execute. A run created through one web process is joined, streamed (resuming with
Last-Event-ID) and cancelled through the other, and runs in a worker; a worker killed mid-run leaves its run to be
retried or failed, never a thread busy forever. In CI this runs on SQLite and again on PostgreSQL + Redis."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from langgraph_sdk import get_client

from agentruntime.models import ChatRun
from tests.chat.support_chat import command, live_chat_server, wait_for_run_end

pytestmark = pytest.mark.live
WORKER_ENV = {"CHAT_GRAPH": "./tests/agentserver/project/graphs.py:slow_graph", "CHAT_RUN_EXECUTOR": "worker",
              "CHAT_RUN_HEARTBEAT_SECONDS": "0.5", "CHAT_RUN_STALE_SECONDS": "3", "CHAT_SWEEP_SECONDS": "1",
              "CHAT_QUEUE_POLL_SECONDS": "0.2"}
web_a = live_chat_server(**WORKER_ENV)
web_b = live_chat_server(**WORKER_ENV)


@pytest.fixture
def workers(web_a, web_b, start_process):
    return [start_process("run_worker", env=WORKER_ENV) for _ in range(2)]


@pytest.fixture
def clients(web_a, web_b, workers):
    loop = asyncio.new_event_loop()
    made = [get_client(url=f"{server.url}/api") for server in (web_a, web_b)]
    yield loop.run_until_complete, made[0], made[1]
    for client in made:
        loop.run_until_complete(client.aclose())
    loop.close()


def wait_for(predicate, timeout: float = 60, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout}s")


async def read(stream, stop_after: int | None = None) -> list:
    parts = []
    async for part in stream:
        parts.append(part)
        if stop_after is not None and len(parts) >= stop_after:
            break
    return parts


def worker_pid(run_id: str) -> int:
    run = wait_for(lambda: ChatRun.objects.filter(pk=run_id).exclude(worker_instance="").first(),
                   what="a worker claiming the run")
    return int(run.worker_instance.split(":")[1])


def test_a_run_accepted_by_one_web_process_runs_in_a_worker_and_is_streamed_and_cancelled_through_another(
        clients, web_a, web_b, workers):
    run_sync, a, b = clients
    thread = run_sync(a.threads.create())
    run = run_sync(a.runs.create(thread["thread_id"], "agent", input={"steps": 40, "delay": 0.1},
                                 stream_mode=["values", "custom"], stream_resumable=True))
    pid = worker_pid(run["run_id"])
    assert pid in {w.process.pid for w in workers}
    assert pid not in {web_a.process.pid, web_b.process.pid}
    first = run_sync(read(b.runs.join_stream(thread["thread_id"], run["run_id"]), stop_after=4))
    assert first[0].event == "metadata" and {p.event for p in first[1:]} <= {"values", "custom"}
    resumed = run_sync(read(b.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id=first[1].id),
                            stop_after=2))
    assert [p.data for p in resumed] == [p.data for p in first[2:4]]
    assert run_sync(b.threads.get(thread["thread_id"]))["status"] == "busy"
    run_sync(b.runs.cancel(thread["thread_id"], run["run_id"], wait=True))
    assert ChatRun.objects.get(pk=run["run_id"]).status == ChatRun.Status.INTERRUPTED
    assert run_sync(a.threads.get(thread["thread_id"]))["status"] != "busy"


def test_a_run_whose_worker_is_killed_before_any_step_finished_runs_again_in_the_other(clients, workers):
    run_sync, a, b = clients
    thread = run_sync(a.threads.create())
    # The first tick takes 3 s: the worker dies while nothing of the run is done.
    run = run_sync(a.runs.create(thread["thread_id"], "agent", input={"steps": 2, "delay": 3}))
    os.kill(worker_pid(run["run_id"]), signal.SIGKILL)
    result = run_sync(b.runs.join(thread["thread_id"], run["run_id"]))
    assert result["ticks"] == [1, 2]
    found = ChatRun.objects.get(pk=run["run_id"])
    assert found.status == ChatRun.Status.COMPLETED and found.attempt == 2


def test_a_run_whose_worker_is_killed_mid_run_fails_and_the_thread_is_free_again(clients, workers):
    run_sync, a, b = clients
    thread = run_sync(a.threads.create())
    run = run_sync(a.runs.create(thread["thread_id"], "agent", input={"steps": 100, "delay": 0.1}))
    pid = worker_pid(run["run_id"])
    wait_for(lambda: len(run_sync(a.threads.get_state(thread["thread_id"]))["values"].get("ticks") or []) >= 3,
             what="three ticks")
    os.kill(pid, signal.SIGKILL)
    result = run_sync(b.runs.join(thread["thread_id"], run["run_id"]))
    assert "__error__" in result
    assert ChatRun.objects.get(pk=run["run_id"]).status == ChatRun.Status.FAILED
    assert run_sync(b.threads.get(thread["thread_id"]))["status"] == "error"
    again = run_sync(b.runs.wait(thread["thread_id"], "agent", input={"steps": 1, "delay": 0}))
    assert again["ticks"][-1] >= 1


def test_the_example_apps_run_start_is_queued_for_a_worker_too(clients, web_a, web_b, workers):
    run_sync, a, b = clients
    thread = run_sync(a.threads.create())["thread_id"]
    started = command(web_a.url, thread, "run.start", {"input": {"steps": 3, "delay": 0.05}}).json()
    assert started["type"] == "success", started
    run_id = started["result"]["run_id"]
    assert worker_pid(run_id) in {w.process.pid for w in workers}
    tree = wait_for_run_end(web_b.url, thread, timeout=60)
    assert tree["status"] == "completed"
    assert run_sync(b.threads.get_state(thread))["values"]["ticks"] == [1, 2, 3]
    assert run_sync(b.runs.get(thread, run_id))["status"] == "success"

"""A web process killed mid-run: `serve` restarts it, and the restarted process ends the runs it owned at once
(no stale-heartbeat timeout); a cancel of a run whose process is gone ends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest

from agentruntime.models import ChatEvent, ChatRun
from agentruntime.services import RESTARTED_ERROR
from tests.chat.support_chat import CHAT_ENV, SseReader, command, is_root_terminal, stream_events, wait_for_run_end
from tests.support_processes import BASE_DIR, LiveServer, child_env, free_port, wait_for_http

pytestmark = pytest.mark.live
EVENTS_GRAPH = {"CHAT_GRAPH": "tests/chat/graphs.py:events_graph"}
ROOT_LIFECYCLE = {"channels": ["lifecycle"], "namespaces": [[]], "depth": 0}
ALL = {"channels": ["lifecycle", "custom"]}
# The bound: from the restarted process's first answer to a new run accepted and the old run's end seen.
RESTART_WINDOW_SECONDS = 5.0


def start_events_run(base: str, thread: str, n: int, delay_s: float = 0.0) -> str:
    response = command(base, thread, "run.start", {"assistant_id": "events", "input": {"n": n, "delay_s": delay_s}})
    assert response.json()["type"] == "success", response.text
    return response.json()["result"]["run_id"]


def wait_for_custom_events(thread: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while ChatEvent.objects.filter(thread_id=thread, channel="custom").count() < count:
        assert time.monotonic() < deadline, f"the run did not store {count} events in {timeout}s"
        time.sleep(0.05)


class Subscriber(threading.Thread):
    """An SSE subscriber reading until its connection breaks or the run ends, remembering the last event id."""

    def __init__(self, url: str, body: dict):
        super().__init__(daemon=True)
        self.url, self.body = url, body
        self.events: list[dict] = []
        self.last_id: str | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with httpx.stream("POST", self.url, json=self.body, timeout=httpx.Timeout(60, read=120)) as response:
                reader = SseReader()
                for chunk in response.iter_text():
                    for frame in reader.feed(chunk):
                        if frame.data is not None:
                            self.events.append(frame.data)
                            self.last_id = frame.id
                            if is_root_terminal(frame.data):
                                return
        except httpx.HTTPError as exc:
            self.error = exc


class Serve:
    """`manage.py serve` (Daphne only, no worker: no sweeper) on the test database."""

    def __init__(self, tmp_path, env: dict):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "serve.log"
        self.env = child_env({**env, "PUBLIC_BASE_URL": self.url})

    def start(self) -> Serve:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--no-setup", "--workers", "0", "--port", str(self.port)],
                cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_until_serving()
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_until_serving(self) -> None:
        wait_for_http(f"{self.url}/healthz", process=self.process, describe=self.output, timeout=90)

    def daphne_pid(self) -> int | None:
        result = subprocess.run(["ps", "-o", "pid=,stat=,args=", "--ppid", str(self.process.pid)],
                                capture_output=True, text=True)
        for line in result.stdout.splitlines():
            pid, stat, args = line.split(None, 2)
            if "daphne" in args and not stat.startswith("Z"):
                return int(pid)
        return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def serve(transactional_db, tmp_path):
    # No stale-heartbeat timeout can help within the test: only the restart may end the run.
    server = Serve(tmp_path, {**CHAT_ENV, **EVENTS_GRAPH, "CHAT_RUN_STALE_SECONDS": "3600"}).start()
    yield server
    server.stop()


def test_a_killed_web_process_is_restarted_and_its_runs_end_within_five_seconds(serve):
    thread = str(uuid.uuid4())
    old_run = start_events_run(serve.url, thread, 100_000, 0.02)
    subscriber = Subscriber(f"{serve.url}/api/threads/{thread}/stream", ALL)
    subscriber.start()
    wait_for_custom_events(thread, 20)
    deadline = time.monotonic() + 60
    while len(subscriber.events) < 5:
        assert time.monotonic() < deadline and subscriber.is_alive(), "the subscriber got no events"
        time.sleep(0.05)

    killed = serve.daphne_pid()
    os.kill(killed, signal.SIGKILL)
    subscriber.join(60)
    assert subscriber.error is not None and not any(is_root_terminal(e) for e in subscriber.events)
    deadline = time.monotonic() + 60
    while serve.daphne_pid() in (None, killed):
        assert time.monotonic() < deadline, f"serve did not restart Daphne:\n{serve.output()}"
        time.sleep(0.05)
    serve.wait_until_serving()
    restarted = time.monotonic()

    # The subscriber reconnects to the restarted process and resumes from its last event.
    try:
        events, _, response = stream_events(f"{serve.url}/api/threads/{thread}/stream", ALL,
                                            headers={"Last-Event-ID": subscriber.last_id},
                                            timeout=RESTART_WINDOW_SECONDS)
    except (httpx.TimeoutException, TimeoutError):
        pytest.fail("the old run's subscriber got no terminal event within 5 s of the restart")
    assert response.status_code == 200 and events and is_root_terminal(events[-1])
    assert events[-1]["params"]["data"]["event"] == "failed"
    assert events[-1]["params"]["data"]["error"] == RESTARTED_ERROR
    assert "the server process restarted" in RESTARTED_ERROR.lower()
    new_run = _start_run_within(serve.url, thread, restarted + RESTART_WINDOW_SECONDS)

    old = ChatRun.objects.get(pk=old_run)
    assert old.status == ChatRun.Status.FAILED and old.error == RESTARTED_ERROR
    assert wait_for_run_end(serve.url, thread)["status"] == "completed"
    assert ChatRun.objects.get(pk=new_run).worker == old.worker != old.worker_instance
    root = stream_events(f"{serve.url}/api/threads/{thread}/stream", ROOT_LIFECYCLE, until=lambda e: False,
                         count=4)[0]
    assert [e["params"]["data"]["event"] for e in root] == ["running", "failed", "running", "completed"]


def _start_run_within(base: str, thread: str, deadline: float) -> str:
    """run.start, retried while the thread is still locked, failing once `deadline` has passed."""
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "the thread did not accept a new run within 5 s of the restart"
        try:
            body = httpx.post(f"{base}/api/threads/{thread}/commands", timeout=remaining, json={
                "id": 1, "method": "run.start", "params": {"assistant_id": "events", "input": {"n": 3}}}).json()
        except httpx.TimeoutException:
            continue
        if body["type"] == "success":
            return body["result"]["run_id"]
        assert "still active" in body["message"], body
        time.sleep(0.1)


@pytest.mark.parametrize("executor", ["a process of this host", "a process of another host"])
def test_a_cancel_ends_a_run_whose_process_is_gone(executor, transactional_db, tmp_path):
    doomed = LiveServer(env={**CHAT_ENV, **EVENTS_GRAPH}, log_path=tmp_path / "doomed.log").start()
    survivor = LiveServer(env={**CHAT_ENV, **EVENTS_GRAPH}, log_path=tmp_path / "survivor.log").start()
    try:
        thread = str(uuid.uuid4())
        run_id = start_events_run(doomed.url, thread, 100_000, 0.02)
        wait_for_custom_events(thread, 5)
        doomed.kill(signal.SIGKILL)
        if executor == "a process of another host":
            # Its pid cannot be checked from here: only its silence after the cancel tells that it is gone.
            ChatRun.objects.filter(pk=run_id).update(worker_instance="elsewhere:4242:feedbeef")
        # One cancel is enough; on a starved machine the wait (5 s) may end first, and the client asks again.
        deadline = time.monotonic() + 60
        while True:
            response = httpx.post(f"{survivor.url}/api/threads/{thread}/runs/{run_id}/cancel?wait=1", timeout=60)
            assert response.status_code == 200
            if response.json()["status"] != "running" or time.monotonic() > deadline:
                break
        assert response.json()["status"] == "failed"
        run = ChatRun.objects.get(pk=run_id)
        expected = "stopped before it finished" if executor == "a process of this host" else "did not answer"
        assert run.status == ChatRun.Status.FAILED and expected in run.error
        root = stream_events(f"{survivor.url}/api/threads/{thread}/stream", ROOT_LIFECYCLE)[0]
        assert [e["params"]["data"]["event"] for e in root] == ["running", "failed"]
        assert root[-1]["params"]["data"]["error"] == run.error
        start_events_run(survivor.url, thread, 3)
        assert wait_for_run_end(survivor.url, thread)["status"] == "completed"
    finally:
        survivor.stop()
        doomed.stop()


def test_a_second_serve_on_the_same_port_refuses_to_start_so_no_identity_is_shared(serve):
    second = subprocess.run([sys.executable, "manage.py", "serve", "--no-setup", "--workers", "0", "--port",
                             str(serve.port)], cwd=BASE_DIR, env=serve.env, capture_output=True, text=True,
                            timeout=120)
    assert second.returncode != 0
    assert f"Another `serve` on this host already uses port {serve.port}" in second.stderr
    assert httpx.get(f"{serve.url}/healthz").status_code == 200

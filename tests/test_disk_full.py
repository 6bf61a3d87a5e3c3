"""The database's disk fills up under a live server: reads keep working, the throttle lets requests through and says
so, /healthz answers 503 with the reason, a run whose events cannot be stored ends and its subscribers get its
terminal event, and trace ingestion answers 503 without acknowledging anything it did not store. Everything
recovers once there is space again.

On SQLite the database file really sits on a small tmpfs that the test fills (when this process may mount one);
everywhere, the same checks also run with the driver's own disk-full error injected (tests/support_disk_full.py).
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from django.db import connection
from langsmith import Client

from accounts.services import api_key_create, workspace_create
from tests.chat.support_chat import CHAT_ENV, SseReader, command, is_root_terminal
from tests.support_disk_full import POSTGRES_MESSAGE, SQLITE_MESSAGE, writes_refused
from tests.support_processes import LiveServer

EVENTS_GRAPH = {"CHAT_GRAPH": "tests/chat/graphs.py:events_graph"}
BOUND_SECONDS = 60  # generous bounds for things that take well under a second when the machine is idle


class TmpfsDisk:
    """The server's SQLite database copied onto a small tmpfs, filled with a file to take the last byte."""

    def __init__(self, root):
        self.root = root
        self.db_path = root / "db.sqlite3"
        self.filler = root / "filler"
        self.reason = SQLITE_MESSAGE

    def prepare(self) -> dict:
        self.root.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(self.root)],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); the injected-error variant runs")
        source, copy = sqlite3.connect(connection.settings_dict["NAME"]), sqlite3.connect(self.db_path)
        source.backup(copy)
        source.close()
        copy.close()
        return {"SQLITE_PATH": str(self.db_path), "DATABASE_URL": ""}

    def fill(self) -> None:
        # Empty the WAL first, so every later commit needs new space (a reused WAL would not).
        checkpoint = sqlite3.connect(self.db_path, timeout=30)
        deadline = time.monotonic() + BOUND_SECONDS
        while checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] != 0:
            assert time.monotonic() < deadline, "the WAL could not be checkpointed"
            time.sleep(0.05)
        checkpoint.close()
        with open(self.filler, "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 65536)
            except OSError:
                pass
            try:
                while True:
                    filler.write(b"\0" * 512)
            except OSError:
                pass

    def free(self) -> None:
        self.filler.unlink()

    def cleanup(self) -> None:
        subprocess.run(["umount", "-l", str(self.root)], capture_output=True)


class InjectedDisk:
    """The server's writes fail with the driver's disk-full error while a flag file exists."""

    def __init__(self, root):
        self.flag = root / "disk-full"
        self.reason = POSTGRES_MESSAGE if connection.vendor == "postgresql" else SQLITE_MESSAGE

    def prepare(self) -> dict:
        return {"DJANGO_SETTINGS_MODULE": "tests.disk_full_settings", "DISK_FULL_FLAG": str(self.flag)}

    def fill(self) -> None:
        self.flag.touch()

    def free(self) -> None:
        self.flag.unlink()

    def cleanup(self) -> None:
        self.flag.unlink(missing_ok=True)


@pytest.fixture(params=["tmpfs", "injected"])
def disk(request, transactional_db, tmp_path):
    if request.param == "tmpfs" and connection.vendor != "sqlite":
        pytest.skip("a tmpfs under the database file only applies to SQLite; the injected variant runs")
    disk = TmpfsDisk(tmp_path / "fs") if request.param == "tmpfs" else InjectedDisk(tmp_path)
    disk.mode = request.param
    yield disk
    disk.cleanup()


@pytest.fixture
def full_disk_server(disk, tmp_path):
    """(server, disk, api key) with the key created before the database may have been copied."""
    workspace = workspace_create(name="disk-full")
    _, key = api_key_create(workspaces=[workspace])
    env = disk.prepare()
    server = LiveServer(env={**CHAT_ENV, **EVENTS_GRAPH, "CHAT_RUN_STALE_SECONDS": "3600", **env},
                        log_path=tmp_path / "server.log").start()
    yield server, disk, {"X-Api-Key": key}
    server.stop()


class Subscriber(threading.Thread):
    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.events: list[tuple[str, dict]] = []

    def run(self) -> None:
        body = {"channels": ["lifecycle", "custom"]}
        with httpx.stream("POST", self.url, json=body, timeout=httpx.Timeout(30, read=300)) as response:
            reader = SseReader()
            for chunk in response.iter_text():
                for frame in reader.feed(chunk):
                    if frame.data is not None:
                        self.events.append((frame.id, frame.data))
                        if is_root_terminal(frame.data):
                            return


def wait_until(predicate, what: str):
    deadline = time.monotonic() + BOUND_SECONDS
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not happen within {BOUND_SECONDS}s"
        time.sleep(0.1)


def trace_run() -> dict:
    run_id = str(uuid.uuid4())
    return {"id": run_id, "trace_id": run_id, "name": "kept", "run_type": "chain", "inputs": {"q": 1},
            "start_time": datetime.now(UTC).isoformat(), "session_name": "disk-full"}


@pytest.mark.live
def test_a_full_disk_keeps_reads_working_and_loses_nothing_silently(full_disk_server):
    server, disk, auth = full_disk_server
    base = server.url
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok", "database": "ok", "cache": "ok"}
    thread = str(uuid.uuid4())
    started = command(base, thread, "run.start", {"assistant_id": "events", "input": {"n": 100_000, "delay_s": 0.02}})
    run_id = started.json()["result"]["run_id"]
    subscriber = Subscriber(f"{base}/api/threads/{thread}/stream")
    subscriber.start()
    wait_until(lambda: len(subscriber.events) >= 10, "the subscriber's first events")

    disk.fill()

    # The run cannot store its events: it ends, and its subscriber is told from memory.
    wait_until(lambda: not subscriber.is_alive(), "the subscriber's terminal event")
    seq, terminal = subscriber.events[-1]
    assert is_root_terminal(terminal) and terminal["params"]["data"]["event"] == "failed"
    assert "could not be stored" in terminal["params"]["data"]["error"]
    assert disk.reason in terminal["params"]["data"]["error"]

    # Reads keep working, through the throttle whose cache cannot be written.
    for path in ("/api/v1/workspaces", "/api/v1/workspaces/current", "/api/v1/sessions", "/v2/deployments"):
        assert httpx.get(f"{base}{path}", headers=auth).status_code == 200, path
    assert httpx.get(f"{base}/api/threads").status_code == 200
    assert command(base, thread, "agent.getTree").json()["type"] == "success"
    assert "rate limiting is off: its cache failed" in server.output()

    health = httpx.get(f"{base}/healthz")
    assert health.status_code == 503
    assert health.json()["database"] == "not writable" and disk.reason in health.json()["reason"]

    # Ingestion refuses with a 5xx the SDK retries, and nothing of the batch is stored.
    lost = trace_run()
    refused = httpx.post(f"{base}/runs/batch", json={"post": [lost]}, headers=auth)
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) > 0
    assert disk.reason in refused.json()["detail"] and "Nothing of this batch was stored" in refused.json()["detail"]
    single = httpx.post(f"{base}/runs", json=trace_run(), headers=auth)
    assert single.status_code == 503
    assert httpx.get(f"{base}/api/v1/runs/{lost['id']}", headers=auth).status_code == 404
    # Any other write is a 503 to retry as well, not a 500.
    created = httpx.post(f"{base}/api/v1/workspaces", json={"name": "not-now"}, headers=auth)
    assert created.status_code == 503 and "Retry-After" in created.headers and disk.reason in created.json()["detail"]
    # A stream on a new thread needs the thread written first: a 503 in the protocol's shape, not a 500.
    opened = httpx.post(f"{base}/api/threads/{uuid.uuid4()}/stream", json={"channels": ["values"]})
    assert opened.status_code == 503 and opened.json()["error"] == "unavailable", opened.text

    disk.free()

    wait_until(lambda: httpx.get(f"{base}/healthz").status_code == 200, "a healthy /healthz")
    # The run's end is recorded as its subscriber saw it, under the same seq.
    tree = wait_until(lambda: _tree_if_ended(base, thread), "the run's end being stored")
    assert tree["status"] == "failed"
    stored = _stored_root_events(base, thread)
    assert stored[-1][0] == seq and stored[-1][1] == terminal
    assert httpx.post(f"{base}/runs/batch", json={"post": [lost]}, headers=auth).status_code == 202
    assert httpx.get(f"{base}/api/v1/runs/{lost['id']}", headers=auth).json()["name"] == "kept"
    assert command(base, thread, "run.start", {"assistant_id": "events", "input": {"n": 2}}).json()["type"] == \
        "success"
    assert wait_until(lambda: _tree_if_ended(base, thread), "the next run's end")["status"] == "completed"
    old = command(base, thread, "agent.getTree", {"run_id": run_id}).json()["result"]["tree"]
    assert old["status"] == "failed"


def _tree_if_ended(base: str, thread: str) -> dict | None:
    tree = command(base, thread, "agent.getTree").json()["result"]["tree"]
    return tree if tree["status"] != "running" else None


def _stored_root_events(base: str, thread: str) -> list[tuple[int, dict]]:
    body = {"channels": ["lifecycle"], "namespaces": [[]], "depth": 0}
    found = []
    with httpx.stream("POST", f"{base}/api/threads/{thread}/stream", json=body,
                      timeout=httpx.Timeout(30, read=1)) as response:
        reader = SseReader()
        try:
            for chunk in response.iter_text():
                found += [(frame.id, frame.data) for frame in reader.feed(chunk) if frame.data is not None]
        except httpx.ReadTimeout:
            pass
    return found


@pytest.mark.live
def test_the_sdk_sends_a_run_the_full_disk_refused_again_and_it_is_stored_once_there_is_room(full_disk_server):
    server, disk, auth = full_disk_server
    client = Client(api_url=server.url, api_key=auth["X-Api-Key"], auto_batch_tracing=False,
                    omit_traced_runtime_info=True)
    run_id = uuid.uuid4()
    disk.fill()
    sender = threading.Thread(target=client.create_run, daemon=True, kwargs={
        "name": "survivor", "inputs": {"q": 1}, "run_type": "chain", "id": run_id, "project_name": "disk-full",
        "start_time": datetime.now(UTC)})
    sender.start()
    # The SDK waits Retry-After (5 s) before it sends the run again: room is made as soon as the first try failed.
    wait_until(lambda: '"POST /runs" 503' in server.output(), "the SDK's first, refused, attempt")
    disk.free()
    sender.join(BOUND_SECONDS)
    assert not sender.is_alive()
    stored = httpx.get(f"{server.url}/api/v1/runs/{run_id}", headers=auth)
    assert stored.status_code == 200 and stored.json()["name"] == "survivor"
    assert server.output().count('"POST /runs" 202') == 1


@pytest.mark.django_db
def test_a_throttle_whose_cache_is_unreachable_lets_requests_through_and_logs_it(api_client, settings, caplog):
    from core import throttling

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "default": "1/min"}
    throttling._last_failure_logged[0] = float("-inf")
    with caplog.at_level(logging.WARNING, logger="core.throttling"):
        statuses = [api_client.get("/api/v1/workspaces").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "rate limiting is off: its cache failed (ConnectionError" in caplog.records[0].message



@pytest.mark.live
def test_an_sqlite_database_on_a_full_disk_stays_readable_between_requests(transactional_db, tmp_path):
    """Django closes its connections after each request; SQLite then drops the files a new one cannot recreate."""
    if connection.vendor != "sqlite":
        pytest.skip("only an SQLite database lives in a file on the server's disk")
    disk = TmpfsDisk(tmp_path / "fs")
    try:
        workspace = workspace_create(name="disk-full-reads")
        _, key = api_key_create(workspaces=[workspace])
        server = LiveServer(env=disk.prepare(), log_path=tmp_path / "server.log").start()
        try:
            disk.fill()
            for _ in range(3):
                response = httpx.get(f"{server.url}/api/v1/workspaces", headers={"X-Api-Key": key})
                assert response.status_code == 200 and response.json()[0]["name"] == "disk-full-reads"
            assert httpx.get(f"{server.url}/healthz").status_code == 503
        finally:
            server.stop()
    finally:
        disk.cleanup()


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_database_refuses_writes_keeps_running_and_says_why(caplog):
    from core.worker import Worker

    stop = threading.Event()
    worker = Worker(worker_id="disk-full-worker")
    thread = threading.Thread(target=worker.run_forever, args=(stop,), daemon=True)
    with caplog.at_level(logging.ERROR, logger="core.worker"), writes_refused():
        thread.start()
        wait_until(lambda: any("the database is unavailable" in r.message for r in caplog.records),
                   "the worker's error")
        assert thread.is_alive()
        stop.set()
        thread.join(BOUND_SECONDS)
    assert not thread.is_alive()
    assert SQLITE_MESSAGE in caplog.text or POSTGRES_MESSAGE in caplog.text

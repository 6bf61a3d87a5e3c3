"""Fan-out and durability across processes: identical sequences for every subscriber, runs seen and cancelled from
another process, a killed server's run replayed and failed by the sweeper, custom events from stream_transformers."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx
import pytest

from agentruntime.models import ChatEvent, ChatRun
from tests.chat.support_chat import (
    SseReader,
    command,
    is_root_terminal,
    live_chat_server,
    parse_frames,
    replay,
    wait_for_run_end,
)
from tests.support_processes import LiveServer

pytestmark = pytest.mark.live
EVENTS_GRAPH = {"CHAT_GRAPH": "tests/chat/graphs.py:events_graph"}
server_a = live_chat_server(**EVENTS_GRAPH)
# A second process on the same database; its channel layer holds one message, so wake-ups get dropped.
server_b = live_chat_server(**EVENTS_GRAPH, CHANNEL_LAYER_CAPACITY="1")
ALL = {"channels": ["values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom"]}


@pytest.fixture
def servers(server_a, server_b, transactional_db):
    return server_a.url, server_b.url


def start_events_run(base: str, thread: str, n: int, delay_s: float = 0.0) -> str:
    response = command(base, thread, "run.start", {"assistant_id": "events", "input": {"n": n, "delay_s": delay_s}})
    assert response.json()["type"] == "success", response.text
    return response.json()["result"]["run_id"]


async def subscribe(client: httpx.AsyncClient, url: str, body: dict, *, ready: asyncio.Event | None = None,
                    progress: list | None = None) -> list[dict]:
    """Read one stream until the root terminal event; `progress` sees events as they come."""
    events = progress if progress is not None else []
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        if ready:
            ready.set()
        reader = SseReader()
        async for chunk in response.aiter_text():
            for frame in reader.feed(chunk):
                if frame.data is not None:
                    events.append(frame.data)
                    if is_root_terminal(frame.data):
                        return events
    raise AssertionError("the stream ended before the run did")


@pytest.mark.parametrize("where", ["server_a", "server_b (layer capacity 1)"])
async def test_fifty_concurrent_subscribers_receive_identical_sequences(servers, where):
    base = servers[0] if where == "server_a" else servers[1]
    thread = str(uuid.uuid4())
    url = f"{base}/api/threads/{thread}/stream"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        readies = [asyncio.Event() for _ in range(25)]
        first_progress: list = []
        early = [asyncio.create_task(subscribe(client, url, ALL, ready=r, progress=first_progress if i == 0 else None))
                 for i, r in enumerate(readies)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 30)
        await asyncio.to_thread(start_events_run, base, thread, 400, 0.002)
        while len(first_progress) < 100 and not early[0].done():
            await asyncio.sleep(0.01)
        late = [asyncio.create_task(subscribe(client, url, ALL)) for _ in range(25)]
        results = await asyncio.wait_for(asyncio.gather(*early, *late), 60)
    reference = await asyncio.to_thread(replay, base, thread)
    assert len({len(r) for r in results}) == 1
    assert all(r == reference for r in results)
    custom = [e["params"]["data"]["i"] for e in reference if e["method"] == "custom"]
    assert custom == list(range(400))


def open_unread_stream(base: str, thread: str) -> socket.socket:
    """A stream whose client reads nothing after the headers, with a small receive buffer: the server's fills up."""
    address = urlsplit(base)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(60)
    sock.connect((address.hostname, address.port))
    body = b'{"channels": ["custom", "lifecycle"]}'
    # HTTP/1.0: the body comes unchunked, so the frames can be read straight off the socket.
    sock.sendall(b"POST /api/threads/%s/stream HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (thread.encode(), address.netloc.encode(), len(body), body))
    head = b""
    while b": connected\n\n" not in head:
        head += sock.recv(1024)
    assert head.split(b" ", 2)[1] == b"200", head
    return sock


def read_until_root_terminal(sock: socket.socket) -> list[dict]:
    text, events = "", []
    while not events or not is_root_terminal(events[-1]):
        chunk = sock.recv(65536)
        assert chunk, "the stream ended before the run did"
        complete, _, text = (text + chunk.decode()).rpartition("\n\n")
        events += [f.data for f in parse_frames(complete + "\n\n") if f.data is not None]
    return events


def test_a_subscriber_that_reads_only_after_the_run_ended_still_gets_every_event_once_in_order(servers):
    # The server stops writing to a connection whose client does not read (the frames wait in the hub): what it
    # holds back must all come once the client reads.
    base = servers[0]
    thread = str(uuid.uuid4())
    with open_unread_stream(base, thread) as sock:
        start_events_run(base, thread, 6000)
        wait_for_run_end(base, thread, timeout=120)
        events = read_until_root_terminal(sock)
    assert [e["params"]["data"]["i"] for e in events if e["method"] == "custom"] == list(range(6000))
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    assert events == replay(base, thread, {"channels": ["custom", "lifecycle"]})


def test_a_run_in_one_process_streams_to_a_subscriber_of_another(servers):
    base_a, base_b = servers
    thread = str(uuid.uuid4())

    async def scenario():
        async with httpx.AsyncClient(timeout=60) as client:
            ready = asyncio.Event()
            reader = asyncio.create_task(subscribe(client, f"{base_b}/api/threads/{thread}/stream", ALL, ready=ready))
            await ready.wait()
            await asyncio.to_thread(start_events_run, base_a, thread, 200, 0.001)
            return await asyncio.wait_for(reader, 60)

    seen_on_b = asyncio.run(scenario())
    assert seen_on_b == replay(base_a, thread)
    assert [e["params"]["data"]["event"] for e in seen_on_b if e["method"] == "lifecycle"] == ["running", "completed"]


def test_a_cancel_sent_to_another_process_interrupts_the_run(servers):
    base_a, base_b = servers
    thread = str(uuid.uuid4())
    run_id = start_events_run(base_a, thread, 100000, 0.01)
    assert command(base_b, thread, "agent.getTree").json()["result"]["tree"]["status"] == "running"
    response = httpx.post(f"{base_b}/api/threads/{thread}/runs/{run_id}/cancel?wait=1&action=interrupt")
    assert response.status_code == 200 and response.json()["status"] == "interrupted"
    root = replay(base_b, thread, {"channels": ["lifecycle"], "namespaces": [[]], "depth": 0})
    assert [e["params"]["data"]["event"] for e in root] == ["running", "interrupted"]
    assert ChatRun.objects.get(pk=run_id).cancel_requested_at is not None


@pytest.mark.parametrize("started_on", ["the process running the run", "the process that took the cancel"])
def test_a_run_start_right_after_a_cancel_waits_for_the_cancelled_run_to_end(servers, started_on):
    base_a, base_b = servers
    thread = str(uuid.uuid4())
    first = start_events_run(base_a, thread, 100000, 0.01)
    # As the JS client's stop(): no wait, 202 while the run is still active (it runs in A, which polls the flag).
    cancel = httpx.post(f"{base_b}/api/threads/{thread}/runs/{first}/cancel")
    assert cancel.status_code == 202 and cancel.json()["status"] == "running"
    second = start_events_run(base_a if started_on.startswith("the process running") else base_b, thread, 3)
    assert ChatRun.objects.get(pk=first).status == ChatRun.Status.INTERRUPTED
    wait_for_run_end(base_a, thread)
    assert ChatRun.objects.get(pk=second).status == ChatRun.Status.COMPLETED
    root = replay(base_a, thread, {"channels": ["lifecycle"], "namespaces": [[]], "depth": 0})
    assert [e["params"]["data"]["event"] for e in root] == ["running", "interrupted", "running", "completed"]


def test_a_run_start_while_a_run_is_active_and_not_cancelled_is_still_refused(servers):
    base_a, base_b = servers
    thread = str(uuid.uuid4())
    first = start_events_run(base_a, thread, 100000, 0.01)
    refused = command(base_b, thread, "run.start", {"input": {"n": 1}}).json()
    assert refused["type"] == "error" and first in refused["message"]
    assert httpx.post(f"{base_a}/api/threads/{thread}/runs/{first}/cancel?wait=1").json()["status"] == "interrupted"


def test_a_killed_servers_events_replay_and_the_sweeper_fails_its_run(servers, tmp_path, start_process):
    _, base_b = servers
    thread = str(uuid.uuid4())
    doomed = LiveServer(env={**EVENTS_GRAPH, "CHAT_AGENT_DELAY_SCALE": "0.05"}, log_path=tmp_path / "doomed.log")
    doomed.start()
    try:
        run_id = start_events_run(doomed.url, thread, 100000, 0.005)
        deadline = time.monotonic() + 30
        while ChatEvent.objects.filter(thread_id=thread, channel="custom").count() < 50:
            assert time.monotonic() < deadline, "the doomed run never got going"
            time.sleep(0.05)
    finally:
        doomed.kill(signal.SIGKILL)
    stored = replay(base_b, thread)
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert not [e for e in stored if is_root_terminal(e)]
    custom = [e["params"]["data"]["i"] for e in stored if e["method"] == "custom"]
    assert custom == list(range(len(custom))) and len(custom) >= 50

    start_process("run_worker", env={"CHAT_RUN_STALE_SECONDS": "1", "CHAT_SWEEP_SECONDS": "1"})
    tree = wait_for_run_end(base_b, thread, timeout=60)
    assert tree["status"] == "failed" and ChatRun.objects.get(pk=run_id).status == ChatRun.Status.FAILED
    after = replay(base_b, thread)
    assert after[:len(stored)] == stored
    assert is_root_terminal(after[-1]) and after[-1]["params"]["data"]["event"] == "failed"
    assert "stopped before it finished" in after[-1]["params"]["data"]["error"]
    start_events_run(base_b, thread, 3)
    assert wait_for_run_end(base_b, thread)["status"] == "completed"

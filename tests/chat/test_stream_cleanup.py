"""SSE streams leave nothing behind: 200 connect/disconnect cycles in process, then count tasks, hubs, threads."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest
from asgiref.testing import ApplicationCommunicator

from agentruntime import db_executor
from agentruntime.events.hub import hubs, poller
from chat.consumers import open_streams

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def close_chat_connections():
    yield
    # The pool's connections would keep the test database from being dropped at the end of the session.
    db_executor.close_connections()


async def settled(timeout: float = 10) -> None:
    """Wait until every stream and hub of this process has wound down."""
    deadline = time.monotonic() + timeout
    while (hubs.hubs or hubs.closing or open_streams or poller_running()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def poller_running() -> bool:
    """The store poller ends at its next tick after the last hub closed (up to CHAT_STORE_POLL_SECONDS later)."""
    return poller.task is not None and not poller.task.done()


def stream_scope(thread_id: str) -> dict:
    return {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": f"/api/threads/{thread_id}/stream", "raw_path": b"", "query_string": b"", "root_path": "",
            "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")],
            "client": ("127.0.0.1", 50000), "server": ("testserver", 80)}


# Fixed pools, started on first use (the checkpointer's may start during the loop, when a stream first reads state).
POOLS = ("chat-db", "chat-checkpointer")


MAX_CHECKPOINTER_POOL = 4  # agentruntime.checkpointer.saver: 4 worker threads on PostgreSQL, 1 on SQLite


def checkpointer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("chat-checkpointer")]


def other_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if not t.name.startswith(POOLS)]


async def connect_and_leave(application, thread_id: str) -> bytes:
    communicator = ApplicationCommunicator(application, stream_scope(thread_id))
    await communicator.send_input({"type": "http.request", "body": b'{"channels": ["values", "lifecycle"]}'})
    start = await communicator.receive_output(10)
    assert start["type"] == "http.response.start" and start["status"] == 200
    first = await communicator.receive_output(10)
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(10)
    return first["body"]


async def test_two_hundred_connect_disconnect_cycles_leak_no_task_hub_or_connection():
    from config.asgi import application

    thread_ids = [str(uuid.uuid4()) for _ in range(5)]
    # Warm up: the first stream starts the database pool and imports what streaming needs.
    await connect_and_leave(application, thread_ids[0])
    await settled()
    tasks_before = len(asyncio.all_tasks())
    other_threads_before = len(other_threads())
    checkpointer_threads_before = len(checkpointer_threads())
    for i in range(200):
        assert await connect_and_leave(application, thread_ids[i % 5]) == b": connected\n\n"
    await settled()
    assert hubs.hubs == {} and not open_streams
    assert len(asyncio.all_tasks()) <= tasks_before
    # Database work runs on a fixed pool of threads, each with one connection: they cannot pile up with streams.
    assert len(other_threads()) <= other_threads_before
    assert len([t for t in threading.enumerate() if t.name.startswith("chat-db")]) <= db_executor.THREADS
    # At most the one pool a first state read may have started, never one per stream.
    assert len(checkpointer_threads()) <= checkpointer_threads_before + MAX_CHECKPOINTER_POOL


async def test_concurrent_streams_share_one_hub_per_thread_until_the_last_leaves():
    from config.asgi import application

    thread_id = str(uuid.uuid4())
    communicators = []
    for _ in range(3):
        communicator = ApplicationCommunicator(application, stream_scope(thread_id))
        await communicator.send_input({"type": "http.request", "body": b'{"channels": ["values"]}'})
        await communicator.receive_output(10)
        await communicator.receive_output(10)
        communicators.append(communicator)
    assert list(hubs.hubs) == [thread_id] and hubs.hubs[thread_id].size == 3
    for communicator in communicators:
        await communicator.send_input({"type": "http.disconnect"})
        await communicator.wait(10)
    await settled()
    assert hubs.hubs == {}

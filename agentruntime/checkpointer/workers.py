"""The worker threads that run the chat checkpointer's queries for its async methods
(agentruntime/checkpointer/saver.py).

Django connections belong to a thread, so each worker keeps its own, reusing it between calls.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from django.db import DatabaseError, connections

# Seconds a worker's connection may sit idle before it is checked (SELECT 1) on its next use.
IDLE_CHECK = 30.0


class Workers:
    """The threads that run the async methods' queries; each keeps its own database connection.

    Like aiosqlite's connection thread: a job goes through a C queue and its result straight into
    the awaiting asyncio future, with fewer Python steps than ThreadPoolExecutor's futures. That
    matters because every step holds the GIL against the event loop that runs the graph.
    """

    def __init__(self, using: str, size: int) -> None:
        self.using = using
        self.size = size
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.idle = threading.local()

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._start()
        self.jobs.put((functools.partial(_settle_soon, loop, future), fn, args))
        return await future

    def _start(self) -> None:
        if len(self.threads) < self.size:
            with self.lock:
                while len(self.threads) < self.size:
                    name = f"chat-checkpointer-{len(self.threads)}"
                    # Daemon: an idle worker must not keep the process alive.
                    thread = threading.Thread(target=self._serve, name=name, daemon=True)
                    thread.start()
                    self.threads.append(thread)

    def _serve(self) -> None:
        self.idle.since = time.monotonic()
        while True:
            settle, fn, args = self.jobs.get()
            try:
                result = self._call(fn, *args)
            except BaseException as exc:  # handed to the awaiting caller
                settle(None, exc)
            else:
                settle(result, None)

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        connection = connections[self.using]
        # The connection is kept between calls. Check it after an error or a long idle spell (a
        # restarted server, an idle timeout) and reconnect rather than fail the next call.
        now = time.monotonic()
        if connection.connection is not None and (connection.errors_occurred or now - self.idle.since > IDLE_CHECK):
            if connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()
        try:
            return fn(*args)
        except DatabaseError:
            if connection.in_atomic_block or connection.connection is None or connection.is_usable():
                raise
            # The server dropped the connection under this call. Every operation of the saver is
            # idempotent (reads, upserts, inserts that ignore duplicates, deletes): reconnect, retry once.
            connection.close()
            return fn(*args)
        finally:
            self.idle.since = time.monotonic()

    def close_connections(self) -> None:
        # Django connections belong to their thread, so every worker closes its own: each close
        # job waits at the barrier until all workers hold one.
        barrier = threading.Barrier(len(self.threads) or 1)
        done: list[Future[Any]] = [Future() for _ in self.threads]

        def close() -> None:
            connections[self.using].close()
            barrier.wait(timeout=30)

        for future in done:
            self.jobs.put((functools.partial(_settle_now, future), close, ()))
        for future in done:
            future.result(timeout=60)


def _settle_soon(loop: asyncio.AbstractEventLoop, future: asyncio.Future, result: Any, exc: BaseException | None):
    try:
        loop.call_soon_threadsafe(_settle_now, future, result, exc)
    except RuntimeError:
        pass  # the loop is closed: nobody is waiting any more


def _settle_now(future: asyncio.Future | Future, result: Any, exc: BaseException | None) -> None:
    if future.cancelled():
        return
    if exc is None:
        future.set_result(result)
    else:
        future.set_exception(exc)

"""Run chat ORM code off the event loop, on a few threads that each keep their database connection.

Django's `sync_to_async` funnels every call of a process through one thread and `database_sync_to_async` closes
the connection after each call; streaming needs neither the bottleneck nor a reconnect per batch. The pool is
small and fixed, so connections cannot leak however many streams come and go.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import connections

T = TypeVar("T")
THREADS = 4

_executor: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="chat-db")
    return _executor


def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    connection = connections["default"]
    # A persistent connection can outlive the server behind it: drop it once it has failed.
    if connection.connection is not None and connection.errors_occurred:
        if connection.is_usable():
            connection.errors_occurred = False
        else:
            connection.close()
    return fn(*args, **kwargs)


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Await `fn(*args, **kwargs)` executed on a chat database thread."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(_call, fn, *args, **kwargs))


def run_blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` executed on a chat database thread, waited for here: for sync code that finds itself
    on an event loop's thread, where Django refuses ORM calls. It blocks that loop meanwhile."""
    return _pool().submit(functools.partial(_call, fn, *args, **kwargs)).result()


def close_connections() -> None:
    """Close every pool thread's connection and stop the pool (it restarts on the next call): tests and shutdown."""
    global _executor
    pool, _executor = _executor, None
    if pool is None:
        return
    threads = len(pool._threads)
    if threads:
        # Connections belong to their thread: park one close task on each thread until all of them hold one.
        barrier = threading.Barrier(threads)

        def close() -> None:
            connections.close_all()
            barrier.wait(timeout=30)

        for future in [pool.submit(close) for _ in range(threads)]:
            future.result()
    pool.shutdown(wait=True)

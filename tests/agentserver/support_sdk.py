"""The official Python `langgraph_sdk` against our servers: one blocking facade over its sync and async clients,
so every scenario runs through both."""

from __future__ import annotations

import asyncio
import inspect

import httpx
from langgraph_sdk import get_client, get_sync_client

PROJECT = "tests/agentserver/project"
NESTED_SPEC = f"./{PROJECT}/graphs.py:nested_graph"
CLIENT_KINDS = ["sync", "async"]


class Blocking:
    """Calls an async client's coroutine methods to completion on one private event loop."""

    def __init__(self, target, loop: asyncio.AbstractEventLoop):
        self._target, self._loop = target, loop

    def __getattr__(self, name: str):
        found = getattr(self._target, name)
        if inspect.iscoroutinefunction(found):
            return lambda *args, **kwargs: self._loop.run_until_complete(found(*args, **kwargs))
        if callable(found):
            return found
        return Blocking(found, self._loop)


class SdkClient:
    """`assistants`, `threads`, `runs`, `crons` and `store` of the sync client, or of the async client run to
    completion."""

    def __init__(self, kind: str, url: str, api_key: str | None = None):
        self.kind = kind
        if kind == "sync":
            self.client = get_sync_client(url=url, api_key=api_key)
            self.loop = None
            self.assistants, self.threads = self.client.assistants, self.client.threads
            self.runs, self.store = self.client.runs, self.client.store
            self.crons = self.client.crons
        else:
            self.loop = asyncio.new_event_loop()
            self.client = get_client(url=url, api_key=api_key)
            self.assistants = Blocking(self.client.assistants, self.loop)
            self.threads = Blocking(self.client.threads, self.loop)
            self.runs = Blocking(self.client.runs, self.loop)
            self.store = Blocking(self.client.store, self.loop)
            self.crons = Blocking(self.client.crons, self.loop)

    def collect(self, stream) -> list:
        """Every part of an SDK stream (an iterator of the sync client, an async iterator of the async one)."""
        if self.loop is None:
            return list(stream)

        async def read() -> list:
            return [part async for part in stream]

        return self.loop.run_until_complete(read())

    def close(self) -> None:
        if self.loop is None:
            self.client.close()
        else:
            self.loop.run_until_complete(self.client.aclose())
            self.loop.close()


def status_of(call) -> tuple[int, dict]:
    """The status and body of the HTTP error an SDK call raises."""
    try:
        call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code, exc.response.json()
    raise AssertionError("the call succeeded")

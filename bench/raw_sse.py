"""A cheap SSE subscriber for benchmarks: an asyncio protocol on a raw socket, chunked decoding, events by regex.

Hundreds of these share one client process, so each delivery must cost the client little: no HTTP library, no JSON
parsing of ordinary events (only of `lifecycle` ones, to spot the root run's end). The receive time of a read is
taken once, when the bytes arrive, and applies to every event in them.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field

import orjson

# A custom event's data as both servers write it: {"i": .., "n": .., "t": ..} (bench/paced_graph.py).
CUSTOM_EVENT = re.compile(rb'"i":(\d+),"n":\d+,"t":([0-9.eE+-]+)')
TERMINAL = {"completed", "failed", "interrupted"}


@dataclass
class RawSubscriber:
    """What one subscriber saw: latencies (s) of custom events, order, and whether the root run's end came."""

    latencies: list[float] = field(default_factory=list)
    received: int = 0
    expect: int = 0
    out_of_order: int = 0
    terminal: bool = False
    error: str = ""


class Dechunker:
    """Incremental HTTP/1.1 chunked transfer decoding."""

    def __init__(self) -> None:
        self.raw = b""
        self.left = 0  # bytes of the current chunk not yet read
        self.crlf = False  # the current chunk's closing CRLF is still due
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self.raw += data
        out = []
        while True:
            if self.left:
                piece = self.raw[:self.left]
                out.append(piece)
                self.raw, self.left = self.raw[len(piece):], self.left - len(piece)
                if self.left:
                    break
                self.crlf = True
            if self.crlf:
                if len(self.raw) < 2:
                    break
                self.raw, self.crlf = self.raw[2:], False
            end = self.raw.find(b"\r\n")
            if end < 0:
                break
            size = int(self.raw[:end].split(b";")[0], 16)
            self.raw = self.raw[end + 2:]
            if size == 0:
                self.done = True
                break
            self.left = size
        return b"".join(out)


class _StreamProtocol(asyncio.Protocol):
    """Reads one SSE response in `data_received`: no task, no stream reader, one clock reading per read."""

    def __init__(self, request: bytes, sub: RawSubscriber, ready: asyncio.Event, done: asyncio.Future):
        self.request, self.sub, self.ready, self.done = request, sub, ready, done
        self.head = b""
        self.dechunker: Dechunker | None = None
        self.in_body = False
        self.text = b""
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        arrived = time.time()
        if not self.in_body:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end], self.head[end + 4:]
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                return self._end(f"HTTP {status}")
            self.in_body = True
            self.dechunker = Dechunker() if b"transfer-encoding: chunked" in head.lower() else None
            self.ready.set()
        text = self.text + (self.dechunker.feed(data) if self.dechunker else data)
        if b"\r" in text:
            text = text.replace(b"\r\n", b"\n")
        cut = text.rfind(b"\n\n")
        if cut < 0:
            self.text = text
            return
        self.text = text[cut + 2:]
        _read_frames(text[:cut], arrived, self.sub)
        if self.sub.terminal:
            self._end("")

    def connection_lost(self, exc) -> None:
        self._end("" if self.sub.terminal else f"the stream ended before the run's end ({exc})")

    def _end(self, error: str) -> None:
        if self.done.done():
            return
        self.sub.error = error
        self.ready.set()
        self.done.set_result(None)
        self.transport.close()


async def subscribe(host: str, port: int, path: str, body: dict, sub: RawSubscriber, ready: asyncio.Event) -> None:
    """POST `body` to the stream at `path`; read until the root run's terminal lifecycle event."""
    payload = orjson.dumps(body)
    request = (b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
               b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
               % (path.encode(), host.encode(), port, len(payload), payload))
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    try:
        await loop.create_connection(lambda: _StreamProtocol(request, sub, ready, done), host, port)
        await done
    except Exception as exc:
        sub.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        ready.set()


def _read_frames(frames: bytes, arrived: float, sub: RawSubscriber) -> None:
    for index, emitted in CUSTOM_EVENT.findall(frames):
        index = int(index)
        sub.latencies.append(arrived - float(emitted))
        sub.out_of_order += index != sub.expect
        sub.expect = index + 1
        sub.received += 1
    if b'"lifecycle"' not in frames:
        return
    for frame in frames.split(b"\n\n"):
        if b'"lifecycle"' not in frame:
            continue
        for line in frame.split(b"\n"):
            if line.startswith(b"data:"):
                event = orjson.loads(line[5:])
                params = event.get("params") or {}
                data = params.get("data")
                if (event.get("method") == "lifecycle" and params.get("namespace") == [] and isinstance(data, dict)
                        and data.get("event") in TERMINAL):
                    sub.terminal = True

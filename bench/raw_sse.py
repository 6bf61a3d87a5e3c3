"""A cheap SSE subscriber for benchmarks: one raw asyncio socket, chunked decoding, custom events found by a regex.

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


async def subscribe(host: str, port: int, path: str, body: dict, sub: RawSubscriber, ready: asyncio.Event) -> None:
    """POST `body` to the stream at `path`; read until the root run's terminal lifecycle event."""
    writer = None
    try:
        reader, writer = await asyncio.open_connection(host, port)
        payload = orjson.dumps(body)
        writer.write(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                     b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
                     % (path.encode(), host.encode(), port, len(payload), payload))
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            raise RuntimeError(f"HTTP {status}")
        dechunker = Dechunker() if b"transfer-encoding: chunked" in head.lower() else None
        ready.set()
        text = b""
        while not sub.terminal:
            data = await reader.read(262144)
            if not data:
                raise RuntimeError("the stream ended before the run's end")
            arrived = time.time()
            text += dechunker.feed(data) if dechunker else data
            if b"\r" in text:
                text = text.replace(b"\r\n", b"\n")
            cut = text.rfind(b"\n\n")
            if cut < 0:
                continue
            frames, text = text[:cut], text[cut + 2:]
            _read_frames(frames, arrived, sub)
    except Exception as exc:
        sub.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        ready.set()
        if writer is not None:
            writer.close()


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

"""Streaming answers of the Agent Server API: a chat run's SSE frames, and waiting for a chat run's result.

Views create the chat run synchronously, then return a Django StreamingHttpResponse over one of these async generators,
which Daphne iterates on its event loop. Frames are read from the thread's event log (replay after the cursor) and
then from the process's thread hub (agentruntime/events/hub.py), like the chat protocol's streams.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from django.conf import settings
from django.http import StreamingHttpResponse

from agentruntime import selectors
from agentruntime.models import ChatRun
from agentruntime.selectors import END_OF_RUN, FramesSubscription, Subscriber, hubs, wait_event
from agentruntime.services import db_run, dumps

STATUS_POLL_SECONDS = 0.25
FALLBACK_STATUS_SECONDS = 1.0
SSE_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}


class _Cursor:
    """Where a stream is in the thread's event log, and whether its run's end was seen."""

    def __init__(self, seq: int):
        self.seq, self.ended = seq, False


async def _stored(thread_id: str, subscription: FramesSubscription, cursor: _Cursor) -> list[bytes]:
    """The subscription's stored frames after the cursor (the log up to its end, page by page), stopping at the
    run's end marker."""
    out: list[bytes] = []
    while not cursor.ended:
        events = await db_run(selectors.events_after, thread_id=thread_id, after_seq=cursor.seq)
        for event in events:
            cursor.seq = event.seq
            if not subscription.matches(event.channel, event.namespace):
                continue
            data = subscription.frame(event)
            if data != END_OF_RUN:
                out.append(data)
            elif subscription.run_ids:
                cursor.ended = True
                break
        if len(events) < selectors.PAGE:
            break
    return out


async def frames(thread_id: str, run_id: str | None, *, since: int, on_abandon=None,
                 watch_status: bool = False) -> AsyncIterator[bytes]:
    """The run's frames after seq `since` until it ends (all runs' frames, forever, when `run_id` is None).

    An Agent Server run's end is a marker in its frames. A protocol run (run.start) has none, so with
    `watch_status` its status is read often; otherwise it is read now and then, for a run that ended without a
    marker (rolled back: deleted with its events). `on_abandon` (async) is awaited when the client goes away before
    the run ended (on_disconnect "cancel").
    """
    subscription = FramesSubscription(run_ids=frozenset({run_id}) if run_id else None)
    subscriber = Subscriber(subscription)
    cursor = _Cursor(since)
    await hubs.attach(thread_id, subscriber)
    try:
        replayed = await _stored(thread_id, subscription, cursor)
        if replayed:
            yield b"".join(replayed)
        interval = settings.CHAT_SSE_HEARTBEAT_SECONDS
        status_every = STATUS_POLL_SECONDS if watch_status else FALLBACK_STATUS_SECONDS
        next_heartbeat = time.monotonic() + interval
        next_status = time.monotonic() + status_every
        while not cursor.ended and not subscriber.overflowed:
            wake_at = min(next_heartbeat, next_status) if run_id else next_heartbeat
            await wait_event(subscriber.wakeup, max(0.0, wake_at - time.monotonic()))
            out = _live(subscriber, subscription, cursor)
            if run_id and not cursor.ended and time.monotonic() >= next_status:
                next_status = time.monotonic() + status_every
                if await db_run(_ended, run_id):
                    # Whatever was stored before the end and not delivered yet, then the end.
                    out += await _stored(thread_id, subscription, cursor)
                    cursor.ended = True
            if time.monotonic() >= next_heartbeat and not cursor.ended:
                out.append(b": heartbeat\n\n")
                next_heartbeat = time.monotonic() + interval
            if out:
                yield b"".join(out)
    finally:
        with contextlib.suppress(Exception):
            await hubs.detach(thread_id, subscriber)
        if not cursor.ended and on_abandon is not None:
            with contextlib.suppress(Exception):
                await on_abandon()


def _live(subscriber: Subscriber, subscription: FramesSubscription, cursor: _Cursor) -> list[bytes]:
    out = []
    for seq, data in subscriber.take():
        if seq <= cursor.seq:
            continue
        cursor.seq = seq
        if data != END_OF_RUN:
            out.append(data)
        elif subscription.run_ids:
            cursor.ended = True
            break
    return out


async def result_after_end(thread_id: str, run_id: str, *, since: int, result, on_abandon=None,
                           after=None, watch_status: bool = False) -> AsyncIterator[bytes]:
    """Wait for the run to end (sending nothing), then its result as JSON: `await result()` gives it."""
    async for _ in frames(thread_id, run_id, since=since, on_abandon=on_abandon, watch_status=watch_status):
        pass
    body = await result()
    yield dumps(body)
    if after is not None:
        with contextlib.suppress(Exception):
            await after()


def _ended(run_id: str) -> bool:
    return not ChatRun.objects.filter(pk=run_id, status__in=(ChatRun.Status.PENDING, ChatRun.Status.RUNNING)).exists()


def sse_response(stream: AsyncIterator[bytes], headers: dict[str, str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    for name, value in {**SSE_HEADERS, **headers}.items():
        response[name] = value
    return response


def json_stream_response(stream: AsyncIterator[bytes], headers: dict[str, str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="application/json")
    for name, value in headers.items():
        response[name] = value
    return response


async def last_seq_of(thread_id: str) -> int:
    state = await db_run(selectors.thread_cursor_state, thread_id=thread_id)
    return state[0] if state else 0

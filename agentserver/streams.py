"""Streaming answers of the Agent Server API: a run's SSE frames, and waiting for a run's result.

Views create the run synchronously, then return a Django StreamingHttpResponse over one of these async generators,
which Daphne iterates on its event loop. Frames are read from the thread's event log (replay after the cursor) and
then from the process's thread hub (chat/hub.py), like the chat protocol's streams.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from django.conf import settings
from django.http import StreamingHttpResponse

from chat import db, selectors
from chat.hub import Subscriber, hubs, wait_event
from chat.models import ChatRun
from chat.subscriptions import END_OF_RUN, FramesSubscription
from chat.wire import dumps

STATUS_POLL_SECONDS = 0.25
SSE_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}


async def frames(thread_id: str, run_id: str | None, *, since: int, on_abandon=None,
                 watch_status: bool = False) -> AsyncIterator[bytes]:
    """The run's frames after seq `since` until it ends (all runs' frames, forever, when `run_id` is None).

    An Agent Server run's end is a marker in its frames; a protocol run (run.start) has no frames, so with
    `watch_status` its status is read instead. `on_abandon` (async) is awaited when the client goes away before the
    run ended (on_disconnect "cancel").
    """
    subscription = FramesSubscription(run_ids=frozenset({run_id}) if run_id else None)
    subscriber = Subscriber(subscription)
    ended = False
    await hubs.attach(thread_id, subscriber)
    try:
        cursor = since
        while True:
            events = await db.run(selectors.events_after, thread_id=thread_id, after_seq=cursor)
            for event in events:
                if subscription.matches(event.channel, event.namespace):
                    data = subscription.frame(event)
                    if data == END_OF_RUN:
                        if run_id:
                            ended = True
                            return
                        continue
                    yield data
            if events:
                cursor = events[-1].seq
            if len(events) < selectors.PAGE:
                break
        interval = settings.CHAT_SSE_HEARTBEAT_SECONDS
        next_heartbeat = time.monotonic() + interval
        while not subscriber.overflowed:
            timeout = max(0.0, next_heartbeat - time.monotonic())
            await wait_event(subscriber.wakeup, min(timeout, STATUS_POLL_SECONDS) if watch_status else timeout)
            if watch_status and await db.run(_ended, run_id):
                ended = True
                return
            out = []
            for seq, data in subscriber.take():
                if seq <= cursor:
                    continue
                cursor = seq
                if data == END_OF_RUN:
                    if run_id:
                        ended = True
                        if out:
                            yield b"".join(out)
                        return
                    continue
                out.append(data)
            if time.monotonic() >= next_heartbeat:
                out.append(b": heartbeat\n\n")
                next_heartbeat = time.monotonic() + interval
            if out:
                yield b"".join(out)
    finally:
        with contextlib.suppress(Exception):
            await hubs.detach(thread_id, subscriber)
        if not ended and on_abandon is not None:
            with contextlib.suppress(Exception):
                await on_abandon()


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
    state = await db.run(selectors.thread_cursor_state, thread_id=thread_id)
    return state[0] if state else 0

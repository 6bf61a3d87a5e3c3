"""The chat's HTTP routes under /api/threads, as Channels consumers (streams must outlive `handle()`).

A thread's state, history and deletion are served by the Agent Server API (agentserver/) on the same paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter

from django.conf import settings

from chat import commands, db, selectors, services
from chat.access import ChatAccessError
from chat.http import BadBody, ChatConsumer, parse_json
from chat.hub import Subscriber, frame, hubs, wait_event
from chat.models import ChatRun
from chat.runner import runs
from chat.subscriptions import InvalidSubscription, parse_subscription

log = logging.getLogger("chat.consumers")
SSE_HEADERS = [(b"Content-Type", b"text/event-stream"), (b"Cache-Control", b"no-cache, no-transform"),
               (b"Connection", b"keep-alive"), (b"X-Accel-Buffering", b"no")]
DEFAULT_TITLE = "New conversation"
STOP_WAIT_SECONDS = 5.0


class ThreadListConsumer(ChatConsumer):
    """GET /api/threads: the caller's threads `[{id, title, updatedAt}]`, newest first."""

    methods = ("GET",)

    async def respond(self, body: bytes) -> None:
        caller = await self.caller()
        threads = await db.run(selectors.thread_list_for_caller, caller=caller)
        await self.send_json(200, [
            {"id": t.id, "title": t.title or DEFAULT_TITLE, "updatedAt": t.updated_at.isoformat()} for t in threads])


class CommandsConsumer(ChatConsumer):
    """POST /api/threads/:id/commands: 200 with a success or error envelope for every command."""

    async def respond(self, body: bytes) -> None:
        caller_or_refusal = None
        try:
            caller = await self.caller(write=True)
        except ChatAccessError as exc:
            if exc.status != 403:
                raise
            caller_or_refusal = exc
        try:
            payload = parse_json(body)
        except BadBody as exc:
            return await self.send_json(200, commands.failure(None, "invalid_argument", str(exc)))
        command_id = commands.command_id_of(payload)
        if caller_or_refusal is not None:
            return await self.send_json(200, commands.failure(command_id, "permission_denied",
                                                              caller_or_refusal.message))
        try:
            command = commands.parse_command(payload)
            commands.check_method(command)
            result = await commands.execute(command, caller=caller, thread_id=self.thread_id)
        except commands.CommandError as exc:
            return await self.send_json(200, commands.failure(command_id, exc.code, exc.message))
        await self.send_json(200, commands.success(command.id, result))


class RunCancelConsumer(ChatConsumer):
    """POST /api/threads/:id/runs/:run_id/cancel (`?wait=1` waits for the run to stop)."""

    async def respond(self, body: bytes) -> None:
        caller = await self.caller(write=True)
        thread = await db.run(selectors.thread_get_for_caller, thread_id=self.thread_id, caller=caller)
        try:
            run_id = uuid.UUID(self.scope["url_route"]["kwargs"]["run_id"])
        except ValueError:
            run_id = None
        run = await db.run(selectors.run_get, thread=thread, run_id=run_id) if run_id else None
        if run is None:
            return await self.send_error(404, "not_found", f"Run {self.scope['url_route']['kwargs']['run_id']} "
                                                           f"not found")
        wait = self.query.get("wait", ["0"])[-1].lower() in ("1", "true", "yes")
        status = await stop_run(run, wait=wait)
        await self.send_json(200 if wait else 202, {"run_id": str(run.id), "status": status})


async def stop_run(run: ChatRun, *, wait: bool = True) -> str:
    """Set the run's cancel flag (seen by whichever process runs it) and stop it here at once if it runs here."""
    await db.run(services.run_cancel_request, run=run)
    runs.cancel(run.id)
    deadline = time.monotonic() + (STOP_WAIT_SECONDS if wait else 0)
    while True:
        status = await db.run(selectors.run_status, run_id=run.pk)
        if status != ChatRun.Status.RUNNING or time.monotonic() >= deadline:
            return status or "deleted"
        await asyncio.sleep(0.1)


# --- SSE ---------------------------------------------------------------------------------------------------------
# Streams open in this process per caller (CHAT_MAX_STREAMS).
open_streams: Counter = Counter()


def _release_stream(key: str) -> None:
    open_streams[key] -= 1
    if open_streams[key] <= 0:
        del open_streams[key]


class StreamConsumer(ChatConsumer):
    """POST /api/threads/:id/stream (and /stream/events): replay after the cursor, then live, as SSE."""

    async def respond(self, body: bytes) -> None:
        caller = await self.caller()
        try:
            subscription = parse_subscription(parse_json(body, default={}), self.headers.get("last-event-id"))
        except InvalidSubscription as exc:
            raise BadBody(str(exc)) from None
        thread = await db.run(services.thread_claim, thread_id=self.thread_id, caller=caller)
        expired_through = (await db.run(selectors.thread_cursor_state, thread_id=thread.id) or (0, 0))[1]
        if subscription.since is not None and subscription.since < expired_through:
            return await self.send_json(410, {"error": "cursor_expired", "message": (
                f"Events up to {expired_through} are no longer retained; reconnect without a cursor to replay "
                f"what is kept.")})
        if open_streams[caller.stream_key] >= settings.CHAT_MAX_STREAMS:
            return await self.send_error(429, "too_many_streams", f"At most {settings.CHAT_MAX_STREAMS} concurrent "
                                                                  f"streams per caller.")
        self.streaming = True
        key = caller.stream_key
        open_streams[key] += 1
        self.stream_task = asyncio.create_task(self._stream(thread.id, subscription))
        # A done callback, not a `finally`: a task cancelled before its first step never runs its body.
        self.stream_task.add_done_callback(lambda _: _release_stream(key))

    async def _stream(self, thread_id: str, subscription) -> None:
        subscriber = Subscriber(subscription)
        try:
            await hubs.attach(thread_id, subscriber)
            await self.send_headers(status=200, headers=SSE_HEADERS)
            await self.send_body(b": connected\n\n", more_body=True)
            cursor = subscription.since
            if cursor is None:
                cursor = await db.run(selectors.replay_start, thread_id=thread_id, scope=settings.CHAT_REPLAY_SCOPE)
            cursor = await self._replay(thread_id, subscriber, cursor)
            await self._live(subscriber, cursor)
            # Only an overflowing subscriber gets here: end the response, the client resumes from its last id.
            await self.send_body(b"", more_body=False)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("stream of thread %s failed", thread_id)
            with contextlib.suppress(Exception):
                await self.send_body(b"", more_body=False)
        finally:
            await asyncio.shield(hubs.detach(thread_id, subscriber))

    async def _replay(self, thread_id: str, subscriber: Subscriber, cursor: int) -> int:
        matches = subscriber.subscription.matches
        while True:
            events = await db.run(selectors.events_after, thread_id=thread_id, after_seq=cursor)
            frames = [frame(e) for e in events if matches(e.channel, e.namespace)]
            if frames:
                await self.send_body(b"".join(frames), more_body=True)
            if events:
                cursor = events[-1].seq
            if len(events) < selectors.PAGE:
                return cursor

    async def _live(self, subscriber: Subscriber, cursor: int) -> None:
        interval = settings.CHAT_SSE_HEARTBEAT_SECONDS
        next_heartbeat = time.monotonic() + interval
        while not subscriber.overflowed:
            await wait_event(subscriber.wakeup, max(0.0, next_heartbeat - time.monotonic()))
            frames = []
            for seq, data in subscriber.take():
                if seq > cursor:
                    frames.append(data)
                    cursor = seq
            if time.monotonic() >= next_heartbeat:
                frames.append(b": heartbeat\n\n")
                next_heartbeat = time.monotonic() + interval
            if frames:
                await self.send_body(b"".join(frames), more_body=True)

    async def http_disconnect(self, message):
        task = getattr(self, "stream_task", None)
        if task is not None and not task.done():
            task.cancel()
            # Bounded: cleanup is quick, and the consumer must exit well inside Daphne's close timeout.
            await asyncio.wait({task}, timeout=2)
        await super().http_disconnect(message)

"""The chat's HTTP routes under /api/threads, as Channels consumers (streams must outlive `handle()`).

A thread's state, history and deletion are served by the Agent Server API (agentserver/) on the same paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter

from django.conf import settings

from agentruntime import selectors, services
from agentruntime.selectors import (
    BATCH_BYTES,
    Caller,
    ChatAccessError,
    Subscriber,
    get_served_graph,
    hubs,
    parse_subscription,
    wait_event,
)
from agentruntime.services import db_run
from chat import protocol_commands
from chat.branches import NoSuchCheckpoint, branch_map, checkpoint_tree, off_branch_runs
from chat.sse_consumer import BadBody, ChatConsumer, parse_json, validated
from chat.thread_approvals import thread_approvals
from core.daphne_compat import ResponseFlow, response_flow

log = logging.getLogger("chat.consumers")
SSE_HEADERS = [(b"Content-Type", b"text/event-stream"), (b"Cache-Control", b"no-cache, no-transform"),
               (b"Connection", b"keep-alive"), (b"X-Accel-Buffering", b"no")]
DEFAULT_TITLE = "New conversation"
PAUSE_LIMIT_SECONDS = 1.0


class ThreadListConsumer(ChatConsumer):
    """GET /api/threads[?q=]: the caller's threads `[{id, title, updatedAt}]`, newest first; `q` keeps those whose
    title contains it. The search is the server's so that it also finds threads beyond the list's first page."""

    methods = ("GET",)

    async def respond(self, body: bytes) -> None:
        caller = await self.caller()
        query = self.query_value("q")[:services.TITLE_MAX_LENGTH]
        threads = await db_run(selectors.thread_list_for_caller, caller=caller, title_contains=query)
        await self.send_json(200, [thread_summary(t) for t in threads])


def thread_summary(thread) -> dict:
    return {"id": thread.id, "title": thread.title or DEFAULT_TITLE, "updatedAt": thread.updated_at.isoformat()}


class BranchesConsumer(ChatConsumer):
    """GET /api/threads/:id/branches[?checkpoint_id=]: the forks on the branch ending at that checkpoint (default: the
    newest), and where each of its messages can be forked from (chat/branches.py)."""

    methods = ("GET",)

    async def respond(self, body: bytes) -> None:
        caller = await self.caller()
        thread = await db_run(selectors.thread_get_for_caller, thread_id=self.thread_id, caller=caller)
        nodes = await checkpoint_tree(get_served_graph(thread.graph_name), thread.id)
        if not nodes:
            return await self.send_error(404, "not_found", f"Thread {thread.id} not found")
        head = self.query_value("checkpoint_id") or None
        try:
            await self.send_json(200, branch_map(nodes, head))
        except NoSuchCheckpoint as exc:
            await self.send_error(404, "no_such_checkpoint", str(exc))


class ApprovalsConsumer(ChatConsumer):
    """GET /api/threads/:id/approvals: the approvals the thread waits on and those already answered, with their
    answers (chat/thread_approvals.py), so the page shows the same cards after a reload."""

    methods = ("GET",)

    async def respond(self, body: bytes) -> None:
        caller = await self.caller()
        thread = await db_run(selectors.thread_get_for_caller, thread_id=self.thread_id, caller=caller)
        approvals = await thread_approvals(get_served_graph(thread.graph_name), thread.id)
        await self.send_json(200, {"approvals": approvals})


class CommandsConsumer(ChatConsumer):
    """POST /api/threads/:id/commands: 200 with a success or error envelope for every command."""

    async def respond(self, body: bytes) -> None:
        access: Caller | ChatAccessError
        try:
            access = await self.caller(write=True)
        except ChatAccessError as exc:
            if exc.status != 403:
                raise
            access = exc
        try:
            payload = parse_json(body)
        except BadBody as exc:
            return await self.send_json(200, protocol_commands.failure(None, "invalid_argument", str(exc)))
        command_id = protocol_commands.command_id_of(payload)
        try:
            if isinstance(access, ChatAccessError):
                raise protocol_commands.CommandError("permission_denied", access.message)
            command = protocol_commands.parse_command(payload)
            result = await protocol_commands.execute(command, caller=access, thread_id=self.thread_id)
        except protocol_commands.CommandError as exc:
            return await self.send_json(200, protocol_commands.failure(command_id, exc.code, exc.message))
        await self.send_json(200, protocol_commands.success(command.id, result))

    async def refuse_thread_id(self, body: bytes, problem: str) -> None:
        try:
            command_id = protocol_commands.command_id_of(parse_json(body))
        except BadBody:
            command_id = None
        await self.send_json(200, protocol_commands.failure(command_id, "invalid_argument", problem))


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
        last_event_id = self.headers.get("last-event-id")
        subscription = validated(body, lambda payload: parse_subscription(payload, last_event_id), default={})
        thread = await db_run(services.thread_claim, thread_id=self.thread_id, caller=caller)
        cursor = await db_run(selectors.thread_cursor_state, thread_id=thread.id)
        last_seq, expired_through = cursor or (0, 0)
        if subscription.since is not None and subscription.since > last_seq:
            # Events are stored before anyone sees them, so no client can have seen an id past the last one.
            raise BadBody(f"The cursor (since or Last-Event-ID) is past this thread's newest "
                          f"event ({last_seq}): resume from an event id you received, or send none.")
        if subscription.since is not None and subscription.since < expired_through:
            return await self.send_error(410, "cursor_expired", f"Events up to {expired_through} are no longer "
                                                                f"retained; reconnect without a cursor to replay what "
                                                                f"is kept.")
        if open_streams[caller.stream_key] >= settings.CHAT_MAX_STREAMS:
            return await self.send_error(429, "too_many_streams", f"At most {settings.CHAT_MAX_STREAMS} concurrent "
                                                                  f"streams per caller.")
        self.streaming = True
        key = caller.stream_key
        open_streams[key] += 1
        self.stream_task = asyncio.create_task(self._stream(thread.id, subscription, thread.graph_name))
        # A done callback, not a `finally`: a task cancelled before its first step never runs its body.
        self.stream_task.add_done_callback(lambda _: _release_stream(key))

    async def _stream(self, thread_id: str, subscription, graph_name: str) -> None:
        subscriber = Subscriber(subscription)
        try:
            await hubs.attach(thread_id, subscriber)
            await self.send_headers(status=200, headers=SSE_HEADERS)
            await self.send_body(b": connected\n\n", more_body=True)
            cursor = subscription.since
            if cursor is None:
                cursor = await db_run(selectors.replay_start, thread_id=thread_id,
                                      scope=settings.CHAT_REPLAY_SCOPE)
            # Runs of branches the thread has left (an edit or a regeneration forked it) are not replayed: the
            # client would take their `values` for the thread's state.
            skipped = off_branch_runs(await checkpoint_tree(get_served_graph(graph_name), thread_id,
                                                            with_messages=False))
            cursor = await self._replay(thread_id, subscriber, cursor, skipped)
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

    async def _replay(self, thread_id: str, subscriber: Subscriber, cursor: int, skipped=frozenset()) -> int:
        matches = subscriber.subscription.matches
        while True:
            events = await db_run(selectors.events_after, thread_id=thread_id, after_seq=cursor,
                                  exclude_runs=skipped)
            frames = [subscriber.subscription.frame(e) for e in events if matches(e.channel, e.namespace)]
            if frames:
                await self.send_body(b"".join(frames), more_body=True)
            if events:
                cursor = events[-1].seq
            if len(events) < selectors.PAGE:
                return cursor

    async def _live(self, subscriber: Subscriber, cursor: int) -> None:
        flow = response_flow(self.base_send)
        try:
            await self._send_live(subscriber, cursor, flow)
        finally:
            if flow is not None:
                flow.close()

    async def _send_live(self, subscriber: Subscriber, cursor: int, flow: ResponseFlow | None) -> None:
        interval = settings.CHAT_SSE_HEARTBEAT_SECONDS
        next_heartbeat = time.monotonic() + interval
        while not subscriber.overflowed:
            timeout = max(0.0, next_heartbeat - time.monotonic())
            if flow is not None and not flow.writable.is_set():
                # The client has not read what was written yet: new frames wait in the hub, shared by all its
                # subscribers, instead of in this connection's buffer. A connection with unread data needs no
                # heartbeat; a client that stops reading for good overflows (MAX_PENDING_FRAMES) and is let go.
                # Never longer than PAUSE_LIMIT_SECONDS at a time: a resume Twisted does not report must not stall
                # the stream (then it writes as it did without flow control).
                if not await wait_event(flow.writable, min(timeout, PAUSE_LIMIT_SECONDS)):
                    next_heartbeat = time.monotonic() + interval
            await wait_event(subscriber.wakeup, timeout)
            chunks = []
            for batch in subscriber.take_batches(max_bytes=BATCH_BYTES):
                if batch.seqs[0] > cursor:
                    chunks.append(batch.data)
                elif batch.seqs[-1] > cursor:
                    # Only right after the replay: the batch began before the replay's end.
                    chunks.extend(data for seq, data in zip(batch.seqs, batch.frames, strict=True) if seq > cursor)
                else:
                    continue
                cursor = batch.seqs[-1]
            if time.monotonic() >= next_heartbeat:
                chunks.append(b": heartbeat\n\n")
                next_heartbeat = time.monotonic() + interval
            # One chunk (the usual case) is the batch's own bytes, shared with the group's other subscribers.
            if chunks:
                await self.send_body(chunks[0] if len(chunks) == 1 else b"".join(chunks), more_body=True)

    async def http_disconnect(self, message):
        task = getattr(self, "stream_task", None)
        if task is not None and not task.done():
            task.cancel()
            # Bounded: cleanup is quick, and the consumer must exit well inside Daphne's close timeout.
            await asyncio.wait({task}, timeout=2)
        await super().http_disconnect(message)

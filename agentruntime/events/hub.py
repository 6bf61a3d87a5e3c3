"""Per-process fan-out of a thread's stored events to its SSE subscribers.

A run stores its events, then sends a wake-up (thread id and seq, never the payload) to the thread's channel-layer
group. Each process has at most one `ThreadHub` per thread with subscribers, and one channel in the group of every
such thread. Woken up, a hub reads the new events from the store once, in seq order, and hands the ready-made SSE
frames to every matching subscriber: readers cost one query per batch, whatever their number, and a lost group
message loses nothing. Every CHAT_STORE_POLL_SECONDS one query also compares the watched threads' last seq with
what their hubs have seen, which is how a run in another process shows up with the in-memory layer and how a
dropped wake-up is recovered. Events stored by a run of this process are handed to its hub directly; with the
in-memory layer, which reaches no other process, wake-ups go straight to this process's hubs too.

A run whose end cannot be stored (a full disk) hands its terminal event to the hubs from memory instead: directly
in its own process, and in the wake-up message (payload included) to the others; a hub dispatches it once it has
read the store up to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from agentruntime import db_executor
from agentruntime.events.records import StoredEvent
from agentruntime.events.subscriptions import FramesSubscription, Subscription
from agentruntime.reads import PAGE, events_after, thread_cursor_state, thread_last_seqs

log = logging.getLogger("agentruntime.events.hub")
WAKE_TYPE = "chat.wake"
# A subscriber this far behind is disconnected; it resumes from the store with its last event id.
MAX_PENDING_FRAMES = 20_000
# Frames are shared in batches of about this size, which is also about what a stream writes at a time: Daphne has
# no backpressure, so whatever a stream writes waits in its connection's buffer (a copy per connection) until the
# client reads it.
BATCH_BYTES = 16 * 1024
SAFETY_POLL_SECONDS = 30.0


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until `event` is set or `timeout` passes; True if it was set.

    Not `asyncio.wait_for`: on Python 3.11 it can swallow a cancellation that arrives as the event fires, which
    leaves a disconnected stream running forever.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
        return True
    except TimeoutError:
        return event.is_set()


def group_name(thread_id: str) -> str:
    # Group names allow only a few characters and < 100 of them; thread ids are client-chosen.
    return "chat.thread." + hashlib.sha256(thread_id.encode()).hexdigest()[:40]


async def publish_unstored(thread_id: str, events: list[StoredEvent]) -> None:
    """Send events that could not be stored (a run's end on a full disk) to every process's hub, payload included.

    Only a channel layer shared by the processes (Redis) reaches other processes; the in-memory one reaches this
    process's hub, which also gets them directly.
    """
    layer = get_channel_layer()
    if layer is None or not events or _local_only(layer):
        return  # an in-memory layer reaches only this process, whose hub the caller gave them directly
    message = {"type": WAKE_TYPE, "thread": thread_id, "seq": events[-1].seq,
               "unstored": [[e.seq, e.channel, list(e.namespace), e.payload.decode()] for e in events]}
    try:
        await layer.group_send(group_name(thread_id), message)
    except Exception:
        log.warning("unstored events of thread %s not sent to other processes", thread_id, exc_info=True)


async def publish(thread_id: str, seq: int) -> None:
    """Tell every process's hub that the thread's events up to `seq` are stored (a lost message is harmless)."""
    layer = get_channel_layer()
    if layer is None:
        return
    if _local_only(layer):
        hubs.woken(thread_id, seq)
        return
    try:
        await layer.group_send(group_name(thread_id), {"type": WAKE_TYPE, "thread": thread_id, "seq": seq})
    except Exception:
        log.warning("wake-up for thread %s (seq %s) not sent; subscribers will find it by polling", thread_id, seq,
                    exc_info=True)


def _local_only(layer) -> bool:
    """An in-memory channel layer reaches only this process's hubs: they are woken directly, without the layer's
    group message and the listener's receive (each a few task switches per stored batch)."""
    return isinstance(layer, InMemoryChannelLayer)


class FrameBatch:
    """The frames one dispatch gave a filter group, shared by all its subscribers: each holds a reference, no copy.

    `data` is the frames joined, so a caught-up subscriber writes the very same bytes object as all the others.
    """

    __slots__ = ("seqs", "frames", "data", "end")

    def __init__(self, seqs: list[int], frames: list[bytes], end: int):
        self.seqs, self.frames, self.end = seqs, frames, end
        self.data = frames[0] if len(frames) == 1 else b"".join(frames)


class FilterGroup:
    """The subscribers of a hub with one filter, and the batches of frames not all of them have taken yet.

    Each subscriber keeps a position in `batches`; what every member has taken is dropped when the next batch comes.
    With 200 subscribers, a frame costs one reference per batch instead of one `(seq, frame)` tuple per subscriber.
    """

    __slots__ = ("subscription", "members", "batches", "first", "frames")

    def __init__(self, subscription: Subscription | FramesSubscription):
        self.subscription = subscription
        self.members: set[Subscriber] = set()
        self.batches: list[FrameBatch] = []
        self.first = 0  # the position of batches[0]
        self.frames = 0  # frames appended so far

    @property
    def end(self) -> int:
        return self.first + len(self.batches)

    def join(self, subscriber: Subscriber) -> None:
        subscriber.group, subscriber.position, subscriber.taken = self, self.end, self.frames
        self.members.add(subscriber)

    def append(self, seqs: list[int], frames: list[bytes]) -> None:
        self._trim()
        start = size = 0
        for index, frame in enumerate(frames):
            size += len(frame)
            if size >= BATCH_BYTES or index == len(frames) - 1:
                self.frames += index + 1 - start
                self.batches.append(FrameBatch(seqs[start:index + 1], frames[start:index + 1], self.frames))
                start, size = index + 1, 0
        for subscriber in self.members:
            subscriber.notify(self.frames)

    def _trim(self) -> None:
        # An overflowed subscriber holds nothing back: it ends its stream and resumes from the store.
        low = min((s.position for s in self.members if not s.overflowed), default=self.end)
        if low > self.first:
            del self.batches[:low - self.first]
            self.first = low


class Subscriber:
    """One SSE connection's place in its filter group's batches. The hub appends; the connection takes."""

    __slots__ = ("subscription", "group", "position", "taken", "wakeup", "overflowed")

    def __init__(self, subscription: Subscription | FramesSubscription):
        self.subscription = subscription
        self.group: FilterGroup | None = None
        self.position = 0  # the next batch of the group to take
        self.taken = 0  # the group's frame count through the last batch taken
        self.wakeup = asyncio.Event()
        self.overflowed = False

    def notify(self, frames: int) -> None:
        """New batches arrived in the group; `frames` is its frame count now."""
        if frames - self.taken > MAX_PENDING_FRAMES:
            self.overflowed = True
        self.wakeup.set()

    def take_batches(self, max_bytes: int | None = None) -> list[FrameBatch]:
        """The batches appended since the last take, oldest first (shared: do not change them).

        With `max_bytes`, only the first batches that fit (at least one); `wakeup` stays set while more are left.
        """
        group = self.group
        if group is None or self.position < group.first:
            # Only an overflowed subscriber falls behind what is kept: it gets no gap, just its stream's end.
            self.wakeup.clear()
            return []
        start = stop = self.position - group.first
        size = 0
        while stop < len(group.batches) and (max_bytes is None or stop == start
                                             or size + len(group.batches[stop].data) <= max_bytes):
            size += len(group.batches[stop].data)
            stop += 1
        batches = group.batches[start:stop]
        self.position = group.first + stop
        if stop == len(group.batches):
            self.wakeup.clear()
        if batches:
            self.taken = batches[-1].end
        return batches

    def take(self) -> list[tuple[int, bytes]]:
        """The frames appended since the last take, as `(seq, frame)`, oldest first."""
        return [pair for batch in self.take_batches() for pair in zip(batch.seqs, batch.frames, strict=True)]


class ThreadHub:
    def __init__(self, thread_id: str):
        self.thread_id = thread_id
        self.last_seq = 0
        # Subscribers grouped by filter: an event is matched once per distinct filter, not once per subscriber.
        self.groups: dict[tuple, FilterGroup] = {}
        self.loop = asyncio.get_running_loop()
        self.ready: asyncio.Future = self.loop.create_future()
        # Events that exist only in memory (the store refused them), dispatched once the store is read up to them.
        self.unstored: list[StoredEvent] = []
        self._wake = asyncio.Event()
        self._pump_task = asyncio.create_task(self._pump(), name=f"chat-hub-pump:{thread_id}")

    @property
    def size(self) -> int:
        return sum(len(group.members) for group in self.groups.values())

    def add(self, subscriber: Subscriber) -> None:
        key = subscriber.subscription.filter_key
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = FilterGroup(subscriber.subscription)
        group.join(subscriber)

    def remove(self, subscriber: Subscriber) -> None:
        key = subscriber.subscription.filter_key
        group = self.groups.get(key)
        if group:
            group.members.discard(subscriber)
            if not group.members:
                del self.groups[key]

    def wake(self) -> None:
        self._wake.set()

    def deliver(self, events: list[StoredEvent]) -> None:
        """Dispatch events this process just stored, sparing the store a read; anything else means a gap."""
        if not self.ready.done():
            self._wake.set()
            return
        if not events or events[-1].seq <= self.last_seq:
            return
        if events[0].seq != self.last_seq + 1:
            self._wake.set()
            return
        self.dispatch(events)
        self.last_seq = events[-1].seq

    def deliver_unstored(self, events: list[StoredEvent]) -> None:
        self.unstored.extend(events)
        self._wake.set()

    async def close(self) -> None:
        self._pump_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._pump_task
        if not self.ready.done():
            self.ready.cancel()
        await listener.leave(self.thread_id)

    def dispatch(self, events: list[StoredEvent]) -> None:
        for group in self.groups.values():
            matches, frame = group.subscription.matches, group.subscription.frame
            seqs, frames = [], []
            for event in events:
                if matches(event.channel, event.namespace):
                    seqs.append(event.seq)
                    frames.append(frame(event))
            if frames:
                group.append(seqs, frames)

    async def _pump(self) -> None:
        try:
            await listener.join(self.thread_id)
            state = await db_executor.run(thread_cursor_state, thread_id=self.thread_id)
            self.last_seq = state[0] if state else 0
            self.ready.set_result(None)
        except Exception as exc:
            self.ready.set_exception(exc)
            raise
        while True:
            # The store poller wakes the hub when it falls behind; the timeout is only a last resort.
            await wait_event(self._wake, SAFETY_POLL_SECONDS)
            self._wake.clear()
            try:
                await self._drain()
                self._dispatch_unstored()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading events of thread %s failed; retrying", self.thread_id)
                await asyncio.sleep(1)

    async def _drain(self) -> None:
        while True:
            events = await db_executor.run(events_after, thread_id=self.thread_id, after_seq=self.last_seq, limit=PAGE)
            full_page = len(events) == PAGE
            # A local run may have delivered some of them while the query ran.
            events = [event for event in events if event.seq > self.last_seq]
            if events:
                self.dispatch(events)
                self.last_seq = events[-1].seq
            if not full_page:
                return

    def _dispatch_unstored(self) -> None:
        events, self.unstored = sorted(self.unstored, key=lambda e: e.seq), []
        events = [event for event in events if event.seq > self.last_seq]
        if events:
            self.dispatch(events)
            self.last_seq = events[-1].seq

    def woken(self, seq: int) -> None:
        if seq > self.last_seq:
            self._wake.set()


class ProcessListener:
    """The process's one channel-layer channel: joins the groups of threads with a hub, wakes their hubs.

    One receive loop per process instead of one per hub keeps Redis round trips (and the in-memory layer's
    per-recipient copies) independent of the number of threads being watched.
    """

    def __init__(self) -> None:
        self.channel: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task | None = None
        self._starting: asyncio.Lock | None = None

    async def join(self, thread_id: str) -> None:
        layer = get_channel_layer()
        if layer is None or _local_only(layer):
            return
        channel = await self._ensure_started(layer)
        await layer.group_add(group_name(thread_id), channel)

    async def leave(self, thread_id: str) -> None:
        layer = get_channel_layer()
        if layer is None or _local_only(layer) or self.channel is None or self.loop is not asyncio.get_running_loop():
            return
        if thread_id in hubs.hubs:
            # A new hub for the thread joined meanwhile: its membership is the same group entry.
            return
        with contextlib.suppress(Exception):
            await layer.group_discard(group_name(thread_id), self.channel)

    async def _ensure_started(self, layer) -> str:
        """The process's channel, its receive loop started on this event loop."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop or self._starting is None:
            # First use, or a new event loop (tests run one per test): the old loop's task is gone with it.
            self.loop, self.channel, self.task, self._starting = loop, None, None, asyncio.Lock()
        async with self._starting:
            if self.channel is None or self.task is None or self.task.done():
                self.channel = channel = await layer.new_channel(prefix="chat.hubs.")
                self.task = loop.create_task(self._receive(layer, channel), name="chat-hub-listener")
            return self.channel

    async def _receive(self, layer, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("channel layer receive failed; hubs poll the store meanwhile", exc_info=True)
                await asyncio.sleep(1)
                continue
            if message.get("type") == WAKE_TYPE:
                hub = hubs.hubs.get(message.get("thread"))
                if hub is not None and message.get("unstored"):
                    hub.deliver_unstored([StoredEvent(seq, channel, tuple(namespace), payload.encode())
                                          for seq, channel, namespace, payload in message["unstored"]])
                elif hub is not None:
                    hub.woken(int(message.get("seq", 0)))


listener = ProcessListener()


class StorePoller:
    """One query per interval for all hubs of the process: which watched threads have newer events than seen."""

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None

    def ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.task.get_loop() is not loop:
            self.task = loop.create_task(self._loop(), name="chat-store-poller")

    async def _loop(self) -> None:
        while hubs.hubs:
            await asyncio.sleep(settings.CHAT_STORE_POLL_SECONDS)
            try:
                seen = await db_executor.run(thread_last_seqs, thread_ids=list(hubs.hubs))
            except Exception:
                log.warning("polling the event store failed", exc_info=True)
                continue
            for thread_id, last_seq in seen.items():
                hub = hubs.hubs.get(thread_id)
                if hub is not None:
                    hub.woken(last_seq)


poller = StorePoller()


class HubRegistry:
    """The hubs of this process, one per thread with at least one subscriber."""

    def __init__(self) -> None:
        self.hubs: dict[str, ThreadHub] = {}
        # Hubs being closed: the subscriber that left last does not wait for the channel layer.
        self.closing: set[asyncio.Task] = set()

    async def attach(self, thread_id: str, subscriber: Subscriber) -> ThreadHub:
        hub = self.hubs.get(thread_id)
        if hub is None:
            hub = self.hubs[thread_id] = ThreadHub(thread_id)
            poller.ensure_running()
        hub.add(subscriber)
        try:
            # The hub must know where the log ends before the subscriber replays: see ChatStreamConsumer.
            await asyncio.shield(hub.ready)
        except BaseException:
            await self.detach(thread_id, subscriber)
            raise
        return hub

    async def detach(self, thread_id: str, subscriber: Subscriber) -> None:
        hub = self.hubs.get(thread_id)
        if hub is None:
            return
        hub.remove(subscriber)
        if hub.size == 0:
            del self.hubs[thread_id]
            task = asyncio.create_task(hub.close(), name=f"chat-hub-close:{thread_id}")
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)

    def wake(self, thread_id: str) -> None:
        hub = self.hubs.get(thread_id)
        if hub is not None:
            hub.wake()

    def deliver(self, thread_id: str, events: list[StoredEvent]) -> None:
        hub = self.hubs.get(thread_id)
        if hub is not None:
            hub.deliver(events)

    def woken(self, thread_id: str, seq: int) -> None:
        """The thread's events up to `seq` are stored: its hub reads what it has not seen (from any thread)."""
        hub = self.hubs.get(thread_id)
        if hub is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if hub.loop is running:
            hub.woken(seq)
        else:
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody is listening
                hub.loop.call_soon_threadsafe(hub.woken, seq)

    def deliver_unstored(self, thread_id: str, events: list[StoredEvent]) -> None:
        hub = self.hubs.get(thread_id)
        if hub is not None:
            hub.deliver_unstored(events)


hubs = HubRegistry()

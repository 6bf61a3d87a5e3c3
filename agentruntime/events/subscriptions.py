"""Which stored events a `/stream` subscriber receives (agent-streaming-protocol.md §4.3)."""

from __future__ import annotations

from dataclasses import dataclass

from agentruntime.events.frames import END_EVENT, FRAME_CHANNEL_PREFIX
from agentruntime.events.records import KNOWN_CHANNELS, StoredEvent

# What FramesSubscription.frame gives for a run's end marker: the stream of that run is over.
END_OF_RUN = b""
_END_PAYLOAD = b"event: " + END_EVENT.encode() + b"\n"


class InvalidSubscription(ValueError):
    pass


@dataclass(frozen=True)
class Subscription:
    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] = ()
    depth: int | None = None
    since: int | None = None

    @property
    def filter_key(self) -> tuple:
        """Subscribers with equal keys receive exactly the same events (the cursor aside)."""
        return (self.channels, self.namespaces, self.depth)

    def matches(self, channel: str, namespace: list[str] | tuple[str, ...]) -> bool:
        """True when an event on `channel` at `namespace` is for this subscriber (`since` is the caller's job)."""
        if not channel:
            return False
        if channel not in self.channels and not (channel.startswith("custom:") and "custom" in self.channels):
            return False
        if not self.namespaces:
            return True
        return any(_prefix_matches(prefix, namespace, self.depth) for prefix in self.namespaces)

    @staticmethod
    def frame(event: StoredEvent) -> bytes:
        """The event as this subscriber's SSE frame."""
        return b"id: %d\nevent: message\ndata: %s\n\n" % (event.seq, event.payload)


@dataclass(frozen=True)
class FramesSubscription:
    """An Agent Server stream: the stored SSE frames of some runs of a thread (None: of all its runs)."""

    run_ids: frozenset[str] | None = None
    since: int | None = None

    @property
    def filter_key(self) -> tuple:
        return ("frames", self.run_ids)

    def matches(self, channel: str, namespace) -> bool:
        if not channel.startswith(FRAME_CHANNEL_PREFIX):
            return False
        return self.run_ids is None or channel[len(FRAME_CHANNEL_PREFIX):] in self.run_ids

    @staticmethod
    def frame(event: StoredEvent) -> bytes:
        if event.payload.startswith(_END_PAYLOAD):
            return END_OF_RUN
        return b"%s\nid: %d\n\n" % (event.payload, event.seq)


def _prefix_matches(prefix: tuple[str, ...], namespace, depth: int | None) -> bool:
    if len(prefix) > len(namespace):
        return False
    for wanted, segment in zip(prefix, namespace, strict=False):
        # "tools" matches any "tools:<id>"; "tools:<id>" needs the exact segment.
        if segment != wanted and (":" in wanted or segment.split(":", 1)[0] != wanted):
            return False
    return depth is None or len(namespace) - len(prefix) <= depth


def parse_subscription(body: dict, last_event_id: str | None = None) -> Subscription:
    """Validate a `/stream` request body (`{channels, namespaces?, depth?, since?}`) plus `Last-Event-ID`."""
    if not isinstance(body, dict):
        raise InvalidSubscription("The body must be a JSON object {channels, namespaces?, depth?, since?}.")
    channels = body.get("channels")
    if not isinstance(channels, list) or not channels or not all(isinstance(c, str) for c in channels):
        raise InvalidSubscription("channels must be a non-empty list of channel names.")
    unknown = [c for c in channels if c not in KNOWN_CHANNELS and not (c.startswith("custom:") and len(c) > 7)]
    if unknown:
        raise InvalidSubscription(f"Unknown channel(s): {', '.join(unknown)}. Known: {', '.join(KNOWN_CHANNELS)}, "
                                  f"custom:<name>.")
    namespaces = body.get("namespaces")
    if namespaces is None:
        namespaces = []
    if not isinstance(namespaces, list) or not all(
            isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in namespaces):
        raise InvalidSubscription("namespaces must be a list of namespaces, each a list of strings.")
    depth = _optional_count(body.get("depth"), "depth")
    since = _optional_count(body.get("since"), "since")
    if since is None:
        since = cursor_from_last_event_id(last_event_id)
    return Subscription(channels=frozenset(channels), namespaces=tuple(tuple(ns) for ns in namespaces),
                        depth=depth, since=since)


def cursor_from_last_event_id(value: str | None) -> int | None:
    """`Last-Event-ID` as a cursor: absent or "-" means from the start."""
    if value is None or value.strip() in ("", "-"):
        return None
    try:
        cursor = int(value.strip())
    except ValueError:
        raise InvalidSubscription("Last-Event-ID must be an event id (a whole number) or \"-\".") from None
    if cursor < 0:
        raise InvalidSubscription("Last-Event-ID must not be negative.")
    return cursor


def _optional_count(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        # JSON has one number type: 10^30 arrives as a float (orjson) and 2^63 as an int, and both are whole.
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSubscription(f"{name} must be a non-negative whole number.")
    return value

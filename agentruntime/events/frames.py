"""An Agent Server run's SSE frames as the event log stores them (agentserver/stream_modes.py makes them).

Light on purpose: the chat's services and subscriptions use these without loading LangChain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FRAME_CHANNEL_PREFIX = "as:"
# Stored last for every run on its frame channel, never sent: tells a run's streams and waiters that it ended.
END_EVENT = "__end__"


def frame_channel(run_id) -> str:
    """The event-log channel holding one run's Agent Server frames."""
    return f"{FRAME_CHANNEL_PREFIX}{run_id}"


@dataclass(slots=True)
class Frame:
    """One SSE frame before the store numbers it; stored like a protocol event (agentruntime.writes.events_append)."""

    event: str
    data: bytes
    channel: str
    namespace: list[str] = field(default_factory=list)

    def encode(self, seq: int) -> bytes:
        # The id line is added when the frame is sent (agentruntime.events.subscriptions.FramesSubscription.frame).
        return b"event: %s\ndata: %s" % (self.event.encode(), self.data)


def end_frame(run_id) -> Frame:
    return Frame(event=END_EVENT, data=b"null", channel=frame_channel(run_id))

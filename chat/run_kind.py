"""The chat product's kind of run, registered with the runtime: a protocol run (`run.start`, `input.respond`) stores
the Agent Streaming Protocol's events only, streams its graph through chat/protocol_runs.py, and is stopped at once
where it runs when cancelled."""

from __future__ import annotations

from agentruntime.models import ChatRun
from agentruntime.services import Events, RunKindPolicy, lifecycle_event, register


def _unclaimed(run: ChatRun) -> Events:
    # Its waiters expect `running` then one terminal event.
    graph_name = run.graph_name or "root"
    return [lifecycle_event([], "running", graph_name=graph_name),
            lifecycle_event([], "interrupted", graph_name=graph_name)]


def register_protocol_runs() -> None:
    register(ChatRun.Kind.PROTOCOL, RunKindPolicy(
        stream="chat.protocol_runs:stream", hold_first=0.0, retried_when_lost=False, stores_frames=False,
        stopped_in_process=True, closing=lambda run_id: [], failed=lambda run_id, exc: [],
        cancelled_unclaimed=_unclaimed, lost=lambda run, error: []))

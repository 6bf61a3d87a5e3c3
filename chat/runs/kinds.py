"""What differs between the kinds of chat run (ChatRun.Kind); everything else about a run is the same for all.

A protocol run (`run.start`, `input.respond`) stores the Agent Streaming Protocol's events only; an Agent Server run
(agentserver/) stores its SSE frames beside them, holds its first output back a moment so that a quick run is one
write, ends its frames after the terminal event, and is queued again once when its process died before checkpointing
anything. Apps add their after-run hooks to their kind in AppConfig.ready, as dotted paths, so that registering
imports nothing heavy into processes that never execute a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from chat.frames import Frame, end_frame, frame_channel
from chat.models import ChatRun
from chat.stream_modes import FrameMaker
from chat.wire import WireEvent, dumps, lifecycle_event
from core.protocol_errors import error_body

# How long the first batch of an Agent Server run's events waits for more (a quick run is stored in one write).
FIRST_BATCH_HOLD_SECONDS = 0.05

Events = list[WireEvent | Frame]


@dataclass
class RunKindPolicy:
    # Seconds the first batch of events waits for more before it is written.
    hold_first: float
    # A run whose process died before it checkpointed anything is queued again, once.
    retried_when_lost: bool
    # Its SSE frames are stored, ended by an end frame: a reader of its frames needs not poll its status.
    stores_frames: bool
    # A cancel stops it through run_stop (chat/runs/control.py) at once where it runs, rather than by the queue's
    # cancel flag.
    stopped_in_process: bool
    # Events after the root lifecycle event that ends the run.
    closing: Callable[[object], Events]
    # Events of a run whose graph raised (or could not be built), before its `failed` lifecycle event.
    failed: Callable[[object, BaseException], Events]
    # Events a run cancelled before any executor claimed it gets (its waiters expect an end).
    cancelled_unclaimed: Callable[[ChatRun], Events]
    # Events a run whose process died gets after its `failed` lifecycle event.
    lost: Callable[[ChatRun, str], Events]
    # "package.module:function" or "package.module.function"; each is awaited as `function(run_request, status)`.
    after_run: list[str] = field(default_factory=list)


def _protocol_unclaimed(run: ChatRun) -> Events:
    graph_name = run.graph_name or "root"
    return [lifecycle_event([], "running", graph_name=graph_name),
            lifecycle_event([], "interrupted", graph_name=graph_name)]


def _agent_server_lost(run: ChatRun, error: str) -> Events:
    return [Frame(event="error", data=dumps(error_body("WorkerLost", error)), channel=frame_channel(run.pk)),
            end_frame(run.pk)]


POLICIES: dict[str, RunKindPolicy] = {
    ChatRun.Kind.PROTOCOL: RunKindPolicy(
        hold_first=0.0, retried_when_lost=False, stores_frames=False, stopped_in_process=True,
        closing=lambda run_id: [], failed=lambda run_id, exc: [], cancelled_unclaimed=_protocol_unclaimed,
        lost=lambda run, error: []),
    ChatRun.Kind.AGENT_SERVER: RunKindPolicy(
        hold_first=FIRST_BATCH_HOLD_SECONDS, retried_when_lost=True, stores_frames=True, stopped_in_process=False,
        closing=lambda run_id: [end_frame(run_id)],
        failed=lambda run_id, exc: [FrameMaker(run_id=run_id, requested=[], subgraphs=False).error(exc)],
        cancelled_unclaimed=lambda run: [end_frame(run.pk)], lost=_agent_server_lost),
}


def policy(kind: str) -> RunKindPolicy:
    return POLICIES[kind]


def after_run(kind: str, path: str) -> None:
    """Await `path` after every run of `kind` ended."""
    hooks = POLICIES[kind].after_run
    if path not in hooks:
        hooks.append(path)

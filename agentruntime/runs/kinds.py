"""What differs between the kinds of chat run (ChatRun.Kind); everything else about a run is the same for all.

The runtime knows no kind by itself: the app that makes a kind of run registers its policy in AppConfig.ready. The
chat product registers the protocol's runs (`run.start`, `input.respond`: chat/run_kind.py), which store the Agent
Streaming Protocol's events only; the Agent Server API registers its runs (agentserver/run_kind.py), which store
their SSE frames beside them, hold their first output back a moment so that a quick run is one write, end their
frames after the terminal event, and are queued again once when their process died before checkpointing anything.
How a kind streams its graph, and its after-run hooks, are dotted paths, so that registering imports nothing heavy
into processes that never execute a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agentruntime.events.frames import Frame
from agentruntime.events.records import WireEvent
from agentruntime.models import ChatRun

Events = list[WireEvent | Frame]


class UnknownRunKind(LookupError):
    """No installed app registered this kind of run."""


@dataclass
class RunKindPolicy:
    # "package.module:function", awaited as `function(served, request, writer, callbacks)` with the served graph,
    # the RunRequest, its EventWriter and the tracing callbacks; it streams the graph into the writer and returns
    # the run's final ChatRun.Status (agentruntime/runs/execution.py).
    stream: str
    # Seconds the first batch of events waits for more before it is written.
    hold_first: float
    # A run whose process died before it checkpointed anything is queued again, once.
    retried_when_lost: bool
    # Its SSE frames are stored, ended by an end frame: a reader of its frames needs not poll its status.
    stores_frames: bool
    # A cancel stops it through run_stop (agentruntime/runs/control.py) at once where it runs, rather than by the
    # queue's cancel flag.
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


POLICIES: dict[str, RunKindPolicy] = {}


def register(kind: str, kind_policy: RunKindPolicy) -> None:
    """Make `kind` a kind of run this process can start, execute, sweep and cancel."""
    POLICIES[kind] = kind_policy


def policy(kind: str) -> RunKindPolicy:
    try:
        return POLICIES[kind]
    except KeyError:
        raise UnknownRunKind(f"No installed app registered chat runs of kind {kind!r}.") from None


def after_run(kind: str, path: str) -> None:
    """Await `path` after every run of `kind` ended."""
    hooks = policy(kind).after_run
    if path not in hooks:
        hooks.append(path)

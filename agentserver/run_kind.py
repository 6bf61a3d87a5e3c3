"""The Agent Server's kind of run, registered with the runtime: it streams its graph through
agentserver/run_streams.py, stores its SSE frames beside the protocol events and ends them with an end frame, holds
its first output back a moment so that a quick run is one write, and is queued again once when its process died
before checkpointing anything."""

from __future__ import annotations

from agentruntime.models import ChatRun
from agentruntime.services import Events, Frame, RunKindPolicy, after_run, dumps, end_frame, frame_channel, register
from core.protocol_errors import error_body

# How long the first batch of an Agent Server run's events waits for more (a quick run is stored in one write).
FIRST_BATCH_HOLD_SECONDS = 0.05


def _failed(run_id, exc: BaseException) -> Events:
    # Imported here: the frames' maker loads LangChain, which only a process executing a run needs.
    from agentserver.stream_modes import FrameMaker

    return [FrameMaker(run_id=run_id, requested=[], subgraphs=False).error(exc)]


def _lost(run: ChatRun, error: str) -> Events:
    return [Frame(event="error", data=dumps(error_body("WorkerLost", error)), channel=frame_channel(run.pk)),
            end_frame(run.pk)]


def register_agent_server_runs() -> None:
    register(ChatRun.Kind.AGENT_SERVER, RunKindPolicy(
        stream="agentserver.run_streams:stream", hold_first=FIRST_BATCH_HOLD_SECONDS, retried_when_lost=True,
        stores_frames=True, stopped_in_process=False, closing=lambda run_id: [end_frame(run_id)], failed=_failed,
        cancelled_unclaimed=lambda run: [end_frame(run.pk)], lost=_lost))
    after_run(ChatRun.Kind.AGENT_SERVER, "agentserver.after_run.call_webhook")
    after_run(ChatRun.Kind.AGENT_SERVER, "agentserver.after_run.remove_temporary_thread")

"""How an Agent Server run streams its graph: `graph.astream` with the run's stream modes, each chunk turned into the
Agent Server's SSE frames (agentserver/stream_modes.py), with the root values and updates stored as protocol events
beside them so that a protocol client of the thread sees the run too. The runtime awaits `stream` for every run of
the Agent Server's kind (agentserver/run_kind.py)."""

from __future__ import annotations

import asyncio
import contextlib

from agentruntime.models import ChatRun
from agentruntime.selectors import checkpoint_interrupts
from agentruntime.services import WireEvent, command_from, make_event, updates_events
from agentserver.stream_modes import FrameMaker, graph_modes


async def stream(served, request, writer, callbacks: list) -> str:
    """Run an Agent Server run: its stream modes' frames, plus root values and updates as protocol events."""
    kwargs = request.kwargs
    requested = list(kwargs.get("stream_mode") or ["values"])
    subgraphs = bool(kwargs.get("subgraphs"))
    maker = FrameMaker(run_id=request.run_id, requested=requested, subgraphs=subgraphs)
    writer.add([maker.metadata(request.run_id, request.attempt)])
    config = run_config(request, callbacks)
    options = {key: kwargs[key] for key in ("interrupt_before", "interrupt_after", "durability")
               if kwargs.get(key)}
    if kwargs.get("context") is not None:
        options["context"] = kwargs["context"]
    # `values` carry the graph's output schema, as the Agent Server's do: astream's default is every channel,
    # private state included (the approvals' `approve_tools`, LangChain's `hitl_edited_tool_calls`).
    output_channels = getattr(served.graph, "output_channels", None)
    if output_channels is not None:
        options["output_keys"] = output_channels
    graph_input = command_from(kwargs.get("command")) or kwargs.get("input")
    if "events" in requested:
        stream = with_events(served.graph, graph_input, config, modes=graph_modes(requested), subgraphs=subgraphs,
                             options=options, run_id=str(request.run_id))
    else:
        stream = served.graph.astream(graph_input, config, stream_mode=graph_modes(requested), subgraphs=subgraphs,
                                      **options)
    interrupted = False
    try:
        async for item in stream:
            events: list = maker.convert(item)
            mode, chunk = (item[1], item[2]) if subgraphs else item
            if mode in ("values", "updates") and not (subgraphs and item[0]):
                events += [make_event("values", [], chunk)] if mode == "values" else updates_events([], chunk)
                interrupted = interrupted or (isinstance(chunk, dict) and "__interrupt__" in chunk)
            writer.add(events)
            writer.release()
            if writer.error:
                raise writer.error
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(stream.aclose())
    if interrupted:
        writer.add(await requested_inputs(served, request.thread_id))
    # Completed even when the graph waits on an interrupt: the thread's status says so (agentserver/selectors.py).
    return ChatRun.Status.COMPLETED


async def requested_inputs(served, thread_id: str) -> list[WireEvent]:
    """What the run left waiting, as the protocol asks for it: an Agent Server run's stream modes carry no
    `input.requested`, so a protocol client of the thread would not see its approvals. Each at the namespace that
    raised it (from the checkpoint)."""
    waiting = await checkpoint_interrupts(served, thread_id)
    return [make_event("input.requested", namespace, {"interrupt_id": interrupt_id, "payload": value})
            for interrupt_id, (value, namespace) in waiting.items()]


async def with_events(graph, graph_input, config: dict, *, modes: list[str], subgraphs: bool, options: dict,
                      run_id: str):
    """The `events` stream mode: the graph's astream_events (v2), the run's own `on_chain_stream` chunks yielded as
    astream yields them, every other event as an `events` item (what the Agent Server forwards)."""
    events = graph.astream_events(graph_input, config, version="v2", stream_mode=modes, subgraphs=subgraphs,
                                  **options)
    try:
        async for event in events:
            if "langsmith:hidden" in (event.get("tags") or ()):
                continue
            if event["event"] == "on_chain_stream" and event["run_id"] == run_id:
                yield event["data"]["chunk"]
            else:
                yield ((), "events", event) if subgraphs else ("events", event)
    finally:
        await events.aclose()


def run_config(request, callbacks: list) -> dict:
    """The RunnableConfig of an Agent Server run: the run's config with its thread, checkpoint and metadata."""
    config = dict(request.kwargs.get("config") or {})
    configurable = {**(config.get("configurable") or {}), "thread_id": request.thread_id,
                    "run_id": str(request.run_id)}
    checkpoint = request.kwargs.get("checkpoint") or {}
    for key in ("checkpoint_id", "checkpoint_ns", "checkpoint_map"):
        if checkpoint.get(key) is not None:
            configurable[key] = checkpoint[key]
    if request.checkpoint_id:
        configurable["checkpoint_id"] = request.checkpoint_id
    return {**config, "configurable": configurable, "run_id": request.run_id,
            "callbacks": callbacks,
            "metadata": {**(config.get("metadata") or {}), **request.metadata, "thread_id": request.thread_id,
                         "run_id": str(request.run_id), "run_attempt": request.attempt}}

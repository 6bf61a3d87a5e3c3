"""How a protocol run streams its graph: LangGraph's astream_events v3, converted to the Agent Streaming Protocol's
events (chat/conversion.py); interrupted when the graph waits on an interrupt. The runtime awaits `stream` for every
run of the protocol's kind (chat/run_kind.py)."""

from __future__ import annotations

import asyncio
import contextlib

from agentruntime.models import ChatRun
from agentruntime.services import command_from
from chat.conversion import EventConverter


async def stream(served, request, writer, callbacks: list) -> str:
    # A run.start's own configurable (approve_tools) first: the thread and checkpoint are the server's.
    configurable = {**((request.kwargs.get("config") or {}).get("configurable") or {}), "thread_id": request.thread_id}
    if request.checkpoint_id:
        configurable["checkpoint_id"] = request.checkpoint_id
    config = {"configurable": configurable, "run_id": request.run_id, "callbacks": callbacks,
              "metadata": {**request.metadata, "thread_id": request.thread_id, "run_id": str(request.run_id)}}
    converter = EventConverter()
    # input.respond resumes with a Command (chat/respond.py).
    graph_input = command_from(request.kwargs.get("command")) or request.input
    events = await served.graph.astream_events(graph_input, config, version="v3",
                                               transformers=[*served.transformers, converter.observer])
    try:
        async for raw in events:
            writer.add(converter.convert(raw))
            if writer.error:
                raise writer.error
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.shield(events.abort())
        raise
    return ChatRun.Status.INTERRUPTED if converter.interrupts else ChatRun.Status.COMPLETED

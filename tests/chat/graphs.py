"""Graphs the chat tests serve through CHAT_GRAPH (`tests/chat/graphs.py:events_graph`)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class EventsState(TypedDict, total=False):
    n: int
    delay_s: float
    emitted: Annotated[int, operator.add]


async def emit(state: EventsState) -> dict:
    """Write `n` custom events `{"i": i}`, sleeping `delay_s` after each."""
    writer = get_stream_writer()
    for i in range(int(state.get("n", 100))):
        writer({"i": i})
        await asyncio.sleep(float(state.get("delay_s", 0) or 0))
    return {"emitted": int(state.get("n", 100))}


_builder = StateGraph(EventsState)
_builder.add_node("emit", emit)
_builder.add_edge(START, "emit")
_builder.add_edge("emit", END)
events_graph = _builder.compile()


def stream_transformers() -> list:
    """Without this, astream_events(version="v3") never asks for custom events: the server must honour it."""
    from langgraph.stream.transformers import CustomTransformer

    return [CustomTransformer]

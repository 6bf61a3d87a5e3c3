"""A graph that streams custom events at a steady rate, like a model streaming tokens (bench/stream_fanout.py --paced).

Served unchanged by `langgraph dev` and by ours. Each event is `{"i", "n", "t"}`, `t` being its emission time
(`time.time()`), so a subscriber measures emission-to-delivery latency as its receive time minus `t`. Input keys:
`rate` (events per second, default 100) and `seconds` (default 30).
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class PacedState(TypedDict, total=False):
    rate: float
    seconds: float
    emitted: Annotated[int, operator.add]


async def emit(state: PacedState) -> dict[str, Any]:
    rate = float(state.get("rate", 100))
    n = int(rate * float(state.get("seconds", 30)))
    writer = get_stream_writer()
    start = time.monotonic()
    for i in range(n):
        # An absolute schedule: a late wake-up does not push every later event back.
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        writer({"i": i, "n": n, "t": time.time()})
    return {"emitted": n}


_paced = StateGraph(PacedState)
_paced.add_node("emit", emit)
_paced.add_edge(START, "emit")
_paced.add_edge("emit", END)
paced_graph = _paced.compile()


def stream_transformers() -> list[Any]:
    # langgraph-api's v2 stream drops get_stream_writer() events without a CustomTransformer (as in the harness's
    # graphs.py); ours honours the same factory.
    from langgraph.stream.transformers import CustomTransformer

    return [CustomTransformer]

"""Graphs the chat tests serve through CHAT_GRAPH (`tests/chat/graphs.py:events_graph`) or `configure_graphs`."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

from langgraph.config import get_store, get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
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


# Two graphs with different state keys, for serving several graphs by name: a thread read through the wrong graph
# would not show its own key.
class FirstState(TypedDict, total=False):
    messages: list
    first: str


class SecondState(TypedDict, total=False):
    messages: list
    second: str


def _answer_first(state: FirstState) -> dict:
    return {"first": f"first graph, {len(state.get('messages') or [])} message(s)"}


def _answer_second(state: SecondState) -> dict:
    return {"second": f"second graph, {len(state.get('messages') or [])} message(s)"}


first_graph = StateGraph(FirstState).add_node("answer", _answer_first).add_edge(START, "answer").compile(
    name="first")
second_graph = StateGraph(SecondState).add_node("answer", _answer_second).add_edge(START, "answer").compile(
    name="second")


class MemoryState(TypedDict, total=False):
    remember: str
    recalled: list[str]
    same_store: bool


async def _remember(state: MemoryState, runtime: Runtime) -> dict:
    # An async node, through runtime.store.
    if state.get("remember"):
        await runtime.store.aput(("memories",), state["remember"], {"text": state["remember"]})
    return {}


def _recall(state: MemoryState, store: BaseStore) -> dict:
    # A sync node, through the `store` argument and get_store().
    found = sorted(item.value["text"] for item in store.search(("memories",)))
    return {"recalled": found, "same_store": get_store() is store}


# Remembers `remember` in the run's store, then lists every memory of it (tests/agentserver/test_store_graphs.py).
memory_graph = (StateGraph(MemoryState).add_node("remember", _remember).add_node("recall", _recall)
                .add_edge(START, "remember").add_edge("remember", "recall").compile())


class ReviewState(TypedDict, total=False):
    messages: list
    decision: str


def _review(state: ReviewState) -> dict:
    from langgraph.types import interrupt

    # Shaped as LangChain's HumanInTheLoopMiddleware asks, for a tool that may only be approved or rejected.
    answer = interrupt({"action_requests": [{"name": "deploy", "args": {"target": "prod"}}],
                        "review_configs": [{"action_name": "deploy", "allowed_decisions": ["approve", "reject"]}]})
    return {"decision": answer["decisions"][0]["type"]}


# One review that allows only approve and reject (tests/chat/test_input_respond_restricted.py).
review_graph = StateGraph(ReviewState).add_node("review", _review).add_edge(START, "review").compile(name="review")

"""The Agent Server tests' project: an echo graph and a graph with a subgraph, no model calls."""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class EchoState(TypedDict, total=False):
    messages: Annotated[list, operator.add]
    echo: str


def echo(state: EchoState) -> EchoState:
    last = (state.get("messages") or [{}])[-1]
    text = last.get("content", "") if isinstance(last, dict) else str(last)
    return {"echo": text}


echo_builder = StateGraph(EchoState)
echo_builder.add_node("echo", echo)
echo_builder.add_edge(START, "echo")
echo_builder.add_edge("echo", END)
echo_graph = echo_builder.compile(name="echo")


class InnerState(TypedDict, total=False):
    steps: Annotated[list, operator.add]


def inner_step(state: InnerState) -> InnerState:
    return {"steps": ["inner"]}


inner_builder = StateGraph(InnerState)
inner_builder.add_node("inner_step", inner_step)
inner_builder.add_edge(START, "inner_step")
inner_builder.add_edge("inner_step", END)
inner_graph = inner_builder.compile(name="inner")


def outer_step(state: InnerState) -> InnerState:
    return {"steps": ["outer"]}


nested_builder = StateGraph(InnerState)
nested_builder.add_node("outer_step", outer_step)
nested_builder.add_node("child", inner_graph)
nested_builder.add_edge(START, "outer_step")
nested_builder.add_edge("outer_step", "child")
nested_builder.add_edge("child", END)
nested_graph = nested_builder.compile(name="nested")

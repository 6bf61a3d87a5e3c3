"""A project for the parallel-interrupt comparison (tests/agentserver/test_differential_interrupts.py): one graph
whose two `Send` branches each ask a human at once (`interrupt()`), as two parallel subagents' approvals do."""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict


class PairState(TypedDict, total=False):
    topics: list[str]
    answers: Annotated[list, operator.add]


def fan_out(state: PairState) -> list[Send]:
    return [Send("ask_one", {"topic": topic}) for topic in state.get("topics") or []]


def ask_one(branch: dict) -> PairState:
    if branch["topic"].startswith("auto"):  # a branch that asks nobody
        return {"answers": [f"{branch['topic']}: done"]}
    answer = interrupt({"question": f"Approve {branch['topic']}?"})
    return {"answers": [f"{branch['topic']}: {answer}"]}


pair_builder = StateGraph(PairState)
pair_builder.add_node("ask_one", ask_one)
pair_builder.add_conditional_edges(START, fan_out, ["ask_one"])
pair_builder.add_edge("ask_one", END)
pair_graph = pair_builder.compile(name="pair")

"""Approvals in the deep agent offline: CHAT_APPROVE_TOOLS and a run's `approve_tools` guard tools by name, in the
coordinator and inside each subagent, and the scripted model follows each decision."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agentruntime.interrupts import PendingInterrupt, checkpoint_interrupts
from agentruntime.served_graphs import ServedGraph
from chat.agent.graph import build_graph

pytestmark = pytest.mark.no_postgres_pass
MATH = "Calculate 42 * 17"


@pytest.fixture(autouse=True)
def fast_agent(monkeypatch, settings):
    monkeypatch.setenv("CHAT_AGENT_DELAY_SCALE", "0")
    settings.CHAT_APPROVE_TOOLS = []


@pytest.fixture
def served():
    return ServedGraph(spec="chat.agent.graph:build_graph", graph=build_graph(InMemorySaver()))


class Turn:
    """One conversation on a fresh thread: send, read what waits, answer."""

    def __init__(self, served: ServedGraph, **configurable):
        self.served = served
        self.config = {"configurable": {"thread_id": str(uuid.uuid4()), **configurable}}

    async def send(self, text: str) -> None:
        await self.served.graph.ainvoke({"messages": [HumanMessage(text)]}, self.config)

    async def pending(self) -> list[PendingInterrupt]:
        found = await checkpoint_interrupts(self.served, self.config["configurable"]["thread_id"])
        return [PendingInterrupt(key, value, namespace) for key, (value, namespace) in found.items()]

    async def answer(self, answers: dict, *, config: dict | None = None) -> None:
        await self.served.graph.ainvoke(Command(resume=answers), config or self.config)

    async def decide(self, *decisions: dict) -> None:
        """Answer the one pending interrupt with these decisions."""
        (waiting,) = await self.pending()
        await self.answer({waiting.id: {"decisions": list(decisions)}})

    async def reply(self) -> str:
        state = await self.served.graph.aget_state(self.config)
        return " ".join(block["text"] for block in state.values["messages"][-1].content
                        if isinstance(block, dict) and block.get("type") == "text")


async def test_without_approvals_a_run_never_waits_and_its_values_do_not_change(served):
    turn = Turn(served)
    await turn.send(MATH)
    assert await turn.pending() == []
    assert "42 * 17 = 714" in await turn.reply()
    # The turn's list stays out of the values clients see.
    values = (await served.graph.aget_state(turn.config)).values
    assert set(values) == {"messages", "files"}


async def test_a_guarded_subagent_tool_waits_in_the_subagents_namespace_with_every_decision_allowed(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["calculator"]
    turn = Turn(served)
    await turn.send(MATH)
    (waiting,) = await turn.pending()
    assert waiting.value["action_requests"] == [{"name": "calculator", "args": {"expression": "42 * 17"},
                                                 "description": waiting.value["action_requests"][0]["description"]}]
    assert waiting.value["review_configs"] == [{"action_name": "calculator",
                                                "allowed_decisions": ["approve", "edit", "reject", "respond"]}]
    assert len(waiting.namespace) == 1 and waiting.namespace[0].startswith("tools:")
    await turn.decide({"type": "approve"})
    assert await turn.pending() == []
    assert "42 * 17 = 714" in await turn.reply()


@pytest.mark.parametrize(("decision", "expected", "absent"), [
    # An edit runs the tool with the new arguments, and the answer says so.
    ({"type": "edit", "edited_action": {"name": "calculator", "args": {"expression": "6 * 7"}}}, ["6 * 7 = 42"],
     "714"),
    # A rejection is not run, and the agent says what it does instead.
    ({"type": "reject", "message": "no calculators today"},
     ["I did not calculate 42 * 17: you rejected the call (no calculators today)", "Instead"], "714"),
    # A response stands in for the tool's result.
    ({"type": "respond", "message": "713"}, ["42 * 17 = 713"], "714"),
])
async def test_the_scripted_model_follows_each_decision(served, settings, decision, expected, absent):
    settings.CHAT_APPROVE_TOOLS = ["calculator"]
    turn = Turn(served)
    await turn.send(MATH)
    await turn.decide(decision)
    reply = await turn.reply()
    assert all(text in reply for text in expected) and absent not in reply


async def test_every_tool_guards_the_coordinators_delegation_then_the_subagents_tool(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["*"]
    turn = Turn(served)
    await turn.send(MATH)
    (delegation,) = await turn.pending()
    assert delegation.namespace == [] and delegation.value["action_requests"][0]["name"] == "task"
    await turn.decide({"type": "approve"})
    (calculation,) = await turn.pending()
    assert calculation.namespace != [] and calculation.value["action_requests"][0]["name"] == "calculator"
    await turn.decide({"type": "approve"})
    assert "42 * 17 = 714" in await turn.reply()


async def test_a_rejected_delegation_never_reaches_the_subagent(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["task"]
    turn = Turn(served)
    await turn.send(MATH)
    await turn.decide({"type": "reject", "message": "do it yourself"})
    reply = await turn.reply()
    assert "I did not delegate this to math-whiz: you rejected the call (do it yourself)" in reply
    assert await turn.pending() == []


async def test_parallel_subagents_wait_at_once_and_one_command_answers_both(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["calculator", "search_web"]
    turn = Turn(served)
    await turn.send("Research the abacus, and separately calculate 42 * 17.")
    waiting = await turn.pending()
    assert sorted(w.value["action_requests"][0]["name"] for w in waiting) == ["calculator", "search_web"]
    assert len({tuple(w.namespace) for w in waiting}) == 2
    await turn.answer({w.id: {"decisions": [{"type": "approve"}]} for w in waiting})
    reply = await turn.reply()
    assert "42 * 17 = 714" in reply and "abacus" in reply.lower()


async def test_answering_one_of_two_leaves_the_other_waiting(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["calculator", "search_web"]
    turn = Turn(served)
    await turn.send("Research the abacus, and separately calculate 42 * 17.")
    first, second = await turn.pending()
    await turn.answer({first.id: {"decisions": [{"type": "approve"}]}})
    assert [w.id for w in await turn.pending()] == [second.id]
    await turn.answer({second.id: {"decisions": [{"type": "approve"}]}})
    assert await turn.pending() == []
    assert "42 * 17 = 714" in await turn.reply()


async def test_a_runs_own_list_overrides_the_setting_either_way(served, settings):
    settings.CHAT_APPROVE_TOOLS = ["*"]
    unguarded = Turn(served, approve_tools=[])
    await unguarded.send(MATH)
    assert await unguarded.pending() == []
    settings.CHAT_APPROVE_TOOLS = []
    guarded = Turn(served, approve_tools="search_web")
    await guarded.send("Research the abacus")
    assert [w.value["action_requests"][0]["name"] for w in await guarded.pending()] == ["search_web"]


async def test_a_resume_without_the_runs_config_still_follows_the_turns_list(served):
    turn = Turn(served, approve_tools=True)
    await turn.send(MATH)
    (delegation,) = await turn.pending()
    # Resumed without `approve_tools`: the subagent, started only now, still asks.
    bare = {"configurable": {"thread_id": turn.config["configurable"]["thread_id"]}}
    await turn.answer({delegation.id: {"decisions": [{"type": "approve"}]}}, config=bare)
    (calculation,) = await turn.pending()
    assert calculation.value["action_requests"][0]["name"] == "calculator"


async def test_a_new_turn_takes_the_list_anew(served):
    turn = Turn(served, approve_tools=["calculator"])
    await turn.send(MATH)
    await turn.decide({"type": "approve"})
    turn.config["configurable"]["approve_tools"] = False
    await turn.send("Calculate 6 * 7")
    assert await turn.pending() == []
    assert "6 * 7 = 42" in await turn.reply()

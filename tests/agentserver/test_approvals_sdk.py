"""Approvals of the deep agent through the Agent Server API with the official Python `langgraph_sdk`: the thread is
`interrupted` with its interrupts, `get_state` shows the waiting tasks, `Command(resume=...)` keyed by interrupt id
resumes, and either protocol answers what the other asked."""

from __future__ import annotations

import pytest

from tests.agentserver.support_sdk import CLIENT_KINDS, SdkClient
from tests.chat.support_chat import command, live_chat_server, replay, wait_for_run_end

pytestmark = pytest.mark.live
server = live_chat_server(CHAT_ALLOW_ANONYMOUS="false")
MATH = {"messages": [{"type": "human", "content": "Calculate 42 * 17"}]}
BOTH = {"messages": [{"type": "human", "content": "Research the abacus, and separately calculate 42 * 17."}]}
APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture(params=CLIENT_KINDS)
def client(request, server, transactional_db, make_client, workspace):
    """The SDK (sync or async) with a fresh chat key of the test's workspace (`client.key`)."""
    key = make_client(workspace, permissions=["chat:use"]).raw_key
    made = SdkClient(request.param, f"{server.url}/api", api_key=key)
    made.key = key
    yield made
    made.close()


def guarded(*tools: str) -> dict:
    return {"configurable": {"approve_tools": list(tools)}}


def final_text(client: SdkClient, thread_id: str) -> str:
    content = client.threads.get_state(thread_id)["values"]["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("text"))


def test_a_subagents_approval_interrupts_the_thread_and_a_command_resumes_it(client):
    thread_id = client.threads.create()["thread_id"]
    waiting = client.runs.wait(thread_id, "agent", input=MATH, config=guarded("calculator"))
    (interrupt,) = waiting["__interrupt__"]
    assert interrupt["value"]["action_requests"][0]["name"] == "calculator"
    thread = client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    assert [i["id"] for found in thread["interrupts"].values() for i in found] == [interrupt["id"]]
    state = client.threads.get_state(thread_id, subgraphs=True)
    assert [i["id"] for i in state["interrupts"]] == [interrupt["id"]]
    # The coordinator's `tools` task waits: the subagent it runs is asking.
    (task,) = [t for t in state["tasks"] if t["interrupts"]]
    assert task["name"] == "tools" and state["next"] == ["tools"]

    done = client.runs.wait(thread_id, "agent", command={"resume": {interrupt["id"]: APPROVE}})
    assert client.threads.get(thread_id)["status"] == "idle"
    assert "42 * 17 = 714" in final_text(client, thread_id)
    # The approvals' private state stays out of the values, as the graph's output schema says.
    assert not {"approve_tools", "hitl_edited_tool_calls"} & (set(waiting) | set(done)), (set(waiting), set(done))


def test_two_waiting_subagents_are_resumed_by_one_command_keyed_by_interrupt_id(client):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "agent", input=BOTH, config=guarded("calculator", "search_web"))
    interrupts = client.threads.get_state(thread_id)["interrupts"]
    assert sorted(i["value"]["action_requests"][0]["name"] for i in interrupts) == ["calculator", "search_web"]
    edit = {"decisions": [{"type": "edit", "edited_action": {"name": "calculator", "args": {"expression": "6 * 7"}}}]}
    answers = {i["id"]: edit if i["value"]["action_requests"][0]["name"] == "calculator" else APPROVE
               for i in interrupts}
    client.runs.wait(thread_id, "agent", command={"resume": answers})
    assert client.threads.get_state(thread_id)["interrupts"] == []
    text = final_text(client, thread_id)
    assert "6 * 7 = 42" in text and "abacus" in text.lower()


@pytest.mark.parametrize(("tool", "reason", "expected"), [
    ("task", "no delegating", "I did not delegate this to math-whiz: you rejected the call (no delegating)"),
    ("calculator", "not now", "you rejected the call (not now)"),
])
def test_a_call_rejected_with_a_reason_never_runs_and_the_agent_repeats_the_reason(client, tool, reason, expected):
    """The coordinator's delegation (`task`) or the subagent's own call."""
    thread_id = client.threads.create()["thread_id"]
    waiting = client.runs.wait(thread_id, "agent", input=MATH, config=guarded(tool))
    (interrupt,) = waiting["__interrupt__"]
    assert interrupt["value"]["action_requests"][0]["name"] == tool
    reject = {"decisions": [{"type": "reject", "message": reason}]}
    client.runs.wait(thread_id, "agent", command={"resume": {interrupt["id"]: reject}})
    text = final_text(client, thread_id)
    assert expected in text and "714" not in text


def test_an_interrupt_asked_on_the_protocol_is_resumed_by_the_sdk_and_the_other_way_round(server, client):
    headers = {"X-Api-Key": client.key}
    thread_id = client.threads.create()["thread_id"]
    started = command(server.url, thread_id, "run.start", {
        "input": MATH, "config": guarded("calculator")}, headers=headers).json()
    assert started["type"] == "success", started
    assert wait_for_run_end(server.url, thread_id, headers=headers)["status"] == "interrupted"
    (interrupt,) = client.threads.get_state(thread_id)["interrupts"]
    client.runs.wait(thread_id, "agent", command={"resume": {interrupt["id"]: APPROVE}})
    assert "42 * 17 = 714" in final_text(client, thread_id)

    # The next turn asks through the SDK and is answered with input.respond.
    waiting = client.runs.wait(thread_id, "agent", input={"messages": [
        {"type": "human", "content": "Calculate 6 * 7"}]}, config=guarded("calculator"))
    (interrupt,) = waiting["__interrupt__"]
    # A protocol client of the thread is asked too, in the math-whiz's namespace.
    asked = [e["params"] for e in replay(server.url, thread_id, {"channels": ["input"]}, headers=headers)]
    assert asked[-1]["data"] == {"interrupt_id": interrupt["id"], "payload": interrupt["value"]}
    assert len(asked[-1]["namespace"]) == 1 and asked[-1]["namespace"][0].startswith("tools:")
    answered = command(server.url, thread_id, "input.respond", {
        "interrupt_id": interrupt["id"], "response": APPROVE}, headers=headers).json()
    assert answered["type"] == "success", answered
    assert wait_for_run_end(server.url, thread_id, headers=headers)["status"] == "completed"
    assert "6 * 7 = 42" in final_text(client, thread_id)


def test_two_subagents_asked_on_the_protocol_are_answered_by_one_command_and_the_other_way_round(server, client):
    headers = {"X-Api-Key": client.key}
    thread_id = client.threads.create()["thread_id"]
    started = command(server.url, thread_id, "run.start", {
        "input": BOTH, "config": guarded("calculator", "search_web")}, headers=headers).json()
    assert started["type"] == "success", started
    assert wait_for_run_end(server.url, thread_id, headers=headers)["status"] == "interrupted"
    interrupts = client.threads.get_state(thread_id)["interrupts"]
    reject = {"decisions": [{"type": "reject", "message": "no web today"}]}
    client.runs.wait(thread_id, "agent", command={"resume": {
        i["id"]: APPROVE if i["value"]["action_requests"][0]["name"] == "calculator" else reject
        for i in interrupts}})
    text = final_text(client, thread_id)
    assert "42 * 17 = 714" in text and "no web today" in text

    # The next turn asks both through the SDK; one input.respond batch answers them in their namespaces.
    client.runs.wait(thread_id, "agent", input=BOTH, config=guarded("calculator", "search_web"))
    waiting = client.threads.get_state(thread_id)["interrupts"]
    asked = {e["params"]["data"]["interrupt_id"]: e["params"]["namespace"]
             for e in replay(server.url, thread_id, {"channels": ["input"]}, headers=headers)}
    answered = command(server.url, thread_id, "input.respond", {"responses": [
        {"namespace": asked[i["id"]], "interrupt_id": i["id"], "response": APPROVE} for i in waiting]},
        headers=headers).json()
    assert answered["type"] == "success", answered
    assert wait_for_run_end(server.url, thread_id, headers=headers)["status"] == "completed"
    assert client.threads.get(thread_id)["status"] == "idle"
    text = final_text(client, thread_id)
    assert "42 * 17 = 714" in text and "abacus" in text.lower()


def test_a_command_answering_an_interrupt_already_answered_runs_nothing_twice(client):
    thread_id = client.threads.create()["thread_id"]
    waiting = client.runs.wait(thread_id, "agent", input=MATH, config=guarded("calculator"))
    (interrupt,) = waiting["__interrupt__"]
    client.runs.wait(thread_id, "agent", command={"resume": {interrupt["id"]: APPROVE}})
    before = client.threads.get_state(thread_id)["values"]["messages"]
    # As in LangGraph, a resume with nothing waiting is a run that does nothing: the same values, no new call.
    again = client.runs.wait(thread_id, "agent", command={"resume": {interrupt["id"]: APPROVE}})
    assert again["messages"] == before == client.threads.get_state(thread_id)["values"]["messages"]
    assert [m["type"] for m in before] == ["human", "ai", "tool", "ai"]

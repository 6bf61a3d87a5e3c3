"""Approvals over the Agent Streaming Protocol: `input.requested` where the call belongs, `input.respond` (single or
batch) resuming the same thread, each interrupt answered exactly once, and bad answers refused in the protocol's
error shape."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
from django.utils import timezone

from agentruntime.models import ChatInterrupt, ChatRun, Checkpoint
from tests.chat.support_chat import (
    command,
    last_run_events,
    live_chat_server,
    new_thread,
    replay,
    start_run,
    wait_for_run_end,
)

pytestmark = pytest.mark.live
chat_server = live_chat_server(CHAT_APPROVE_TOOLS="calculator,search_web")
MATH = "Calculate 42 * 17"
BOTH = "Research the abacus, and separately calculate 42 * 17."
APPROVE = {"decisions": [{"type": "approve"}]}


def run_until_waiting(base: str, thread: str, text: str = MATH, *, headers: dict | None = None) -> list[dict]:
    """Start a run, wait for it to end interrupted, and return its `input.requested` events."""
    start_run(base, thread, text, headers=headers)
    assert wait_for_run_end(base, thread, headers=headers)["status"] == "interrupted"
    return requests_of(last_run_events(replay(base, thread, headers=headers)))


def requests_of(events: list[dict]) -> list[dict]:
    return [e for e in events if e["method"] == "input.requested"]


def respond(base: str, thread: str, params: dict, *, headers: dict | None = None) -> dict:
    response = command(base, thread, "input.respond", params, headers=headers)
    assert response.status_code == 200
    return response.json()


def answer(base: str, thread: str, request: dict, response: dict) -> dict:
    return respond(base, thread, {"namespace": request["params"]["namespace"],
                                  "interrupt_id": request["params"]["data"]["interrupt_id"], "response": response})


def reply(base: str, thread: str) -> str:
    message = command(base, thread, "state.get").json()["result"]["values"]["messages"][-1]
    content = message["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("text"))


def calculator_runs(base: str, thread: str, headers: dict | None = None) -> int:
    return sum(1 for e in replay(base, thread, headers=headers) if e["method"] == "tools"
               and e["params"]["data"].get("event") == "tool-started"
               and e["params"]["data"].get("tool_name") == "calculator")


def test_a_guarded_call_ends_the_run_interrupted_asking_in_the_subagents_namespace(base):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    namespace, data = request["params"]["namespace"], request["params"]["data"]
    assert len(namespace) == 1 and namespace[0].startswith("tools:")
    assert data["interrupt_id"] and data["payload"]["action_requests"][0]["name"] == "calculator"
    assert data["payload"]["action_requests"][0]["args"] == {"expression": "42 * 17"}
    assert data["payload"]["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
    # The calculator waits: it has not run.
    assert calculator_runs(base, thread) == 0


@pytest.mark.parametrize(("decision", "expected", "absent"), [
    ({"type": "approve"}, "42 * 17 = 714", None),
    ({"type": "edit", "edited_action": {"name": "calculator", "args": {"expression": "6 * 7"}}}, "6 * 7 = 42", "714"),
    ({"type": "reject", "message": "not now"}, "you rejected the call (not now)", "714"),
])
def test_each_decision_resumes_the_same_thread_once(base, decision, expected, absent):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    assert answer(base, thread, request, {"decisions": [decision]}) == {"type": "success", "id": 1, "result": {}}
    assert wait_for_run_end(base, thread)["status"] == "completed"
    text = reply(base, thread)
    assert expected in text and (absent is None or absent not in text)
    # Resumed, not restarted: the history is the one turn's, and the calculator ran at most once.
    messages = command(base, thread, "state.get").json()["result"]["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    assert calculator_runs(base, thread) == (0 if decision["type"] == "reject" else 1)


def test_two_subagents_wait_at_once_and_one_batch_answers_both(base):
    thread = new_thread()
    requests = run_until_waiting(base, thread, BOTH)
    assert sorted(r["params"]["data"]["payload"]["action_requests"][0]["name"] for r in requests) == [
        "calculator", "search_web"]
    assert len({tuple(r["params"]["namespace"]) for r in requests}) == 2
    result = respond(base, thread, {"responses": [
        {"namespace": r["params"]["namespace"], "interrupt_id": r["params"]["data"]["interrupt_id"],
         "response": APPROVE} for r in requests]})
    assert result["type"] == "success", result
    assert wait_for_run_end(base, thread)["status"] == "completed"
    text = reply(base, thread)
    assert "42 * 17 = 714" in text and "abacus" in text.lower()


def test_one_of_two_answered_leaves_the_other_asked_again(base):
    thread = new_thread()
    first, second = run_until_waiting(base, thread, BOTH)
    assert answer(base, thread, first, APPROVE)["type"] == "success"
    assert wait_for_run_end(base, thread)["status"] == "interrupted"
    again = requests_of(last_run_events(replay(base, thread)))
    assert [r["params"]["data"]["interrupt_id"] for r in again] == [second["params"]["data"]["interrupt_id"]]
    assert answer(base, thread, second, APPROVE)["type"] == "success"
    assert wait_for_run_end(base, thread)["status"] == "completed"


def test_an_answered_or_unknown_interrupt_is_no_such_interrupt(base):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    assert answer(base, thread, request, APPROVE)["type"] == "success"
    wait_for_run_end(base, thread)
    stale = answer(base, thread, request, APPROVE)
    assert stale["type"] == "error" and stale["error"] == "no_such_interrupt" and stale["message"]
    unknown = respond(base, thread, {"interrupt_id": "0" * 32, "response": APPROVE})
    assert unknown["error"] == "no_such_interrupt"
    assert calculator_runs(base, thread) == 1


@pytest.mark.parametrize("checkpointed", [False, True])
def test_an_answer_whose_run_died_before_checkpointing_anything_may_be_given_again(base, checkpointed):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    interrupt_id = request["params"]["data"]["interrupt_id"]
    # As if an answer had been claimed by a run whose process died at once (the sweeper failed it).
    dead = ChatRun.objects.create(id=uuid.uuid4(), thread_id=thread, status=ChatRun.Status.FAILED)
    ChatInterrupt.objects.create(thread_id=thread, interrupt_id=interrupt_id, answered_at=timezone.now(), run=dead)
    if checkpointed:  # it got as far as a checkpoint: the answer may have reached the graph
        Checkpoint.objects.create(thread_id=thread, checkpoint_ns="", checkpoint_id="0", run_id=str(dead.pk),
                                  type="msgpack", checkpoint=b"")
    again = answer(base, thread, request, APPROVE)
    if checkpointed:
        assert again["error"] == "no_such_interrupt"
        return
    assert again["type"] == "success", again
    assert wait_for_run_end(base, thread)["status"] == "completed"
    assert calculator_runs(base, thread) == 1


def test_two_tabs_answering_at_once_one_wins_and_nothing_runs_twice(base):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    barrier, results = threading.Barrier(4), []

    def tab():
        barrier.wait()
        results.append(answer(base, thread, request, APPROVE))

    tabs = [threading.Thread(target=tab) for _ in range(4)]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join()
    assert sorted(r["type"] for r in results) == ["error", "error", "error", "success"], results
    assert {r["error"] for r in results if r["type"] == "error"} == {"no_such_interrupt"}
    assert wait_for_run_end(base, thread)["status"] == "completed"
    assert calculator_runs(base, thread) == 1


@pytest.mark.parametrize(("params", "problem"), [
    ({"response": APPROVE}, "interrupt_id is required"),
    ({"responses": [{"response": APPROVE}]}, "interrupt_id is required"),
    ({"responses": []}, "responses must be"),
    ({"response": {"decisions": [{"type": "maybe"}]}}, "must be one of"),
    ({"response": {"decisions": []}}, "one decision per call"),
    ({"response": {"type": "approve"}}, "one decision per call"),
    ({"response": {"decisions": [{"type": "edit", "edited_action": {"name": "search_web", "args": {}}}]}},
     "edited_action must be"),
    ({"response": {"decisions": [{"type": "respond"}]}}, "needs message"),
    ({"namespace": ["elsewhere"], "response": APPROVE}, "was raised at namespace"),
    ({"response": APPROVE, "update": ["not", "values"]}, "update must be"),
    ({"response": APPROVE, "update": {"no_such_key": 1}}, "update must be"),
    ({"response": APPROVE, "goto": "nowhere"}, "goto must name nodes"),
])
def test_bad_answers_are_invalid_argument_and_leave_the_interrupt_waiting(base, params, problem):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    if "responses" not in params and "interrupt_id" not in params and problem != "interrupt_id is required":
        params = {"interrupt_id": request["params"]["data"]["interrupt_id"], **params}
    refused = respond(base, thread, params)
    assert refused["type"] == "error" and refused["error"] == "invalid_argument", refused
    assert problem in refused["message"]
    # Still waiting, still answerable.
    assert answer(base, thread, request, APPROVE)["type"] == "success"
    assert wait_for_run_end(base, thread)["status"] == "completed"


def test_another_callers_thread_is_invalid_argument(base, make_client, workspace):
    owner = {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key}
    thread = new_thread()
    (request,) = run_until_waiting(base, thread, headers=owner)
    foreign = respond(base, thread, {"interrupt_id": request["params"]["data"]["interrupt_id"], "response": APPROVE})
    assert foreign["type"] == "error" and foreign["error"] == "invalid_argument"
    assert calculator_runs(base, thread, owner) == 0


def test_a_reload_sees_the_pending_approval_in_the_log_and_the_state(base):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    # A new connection (a reload, another device) replays the same request from the stored log...
    replayed = requests_of(replay(base, thread, {"channels": ["input"]}))
    assert [r["params"]["data"] for r in replayed] == [request["params"]["data"]]
    # ...and the thread's state shows it pending, with the coordinator's own messages (not the subagent's).
    state = httpx.get(f"{base}/api/threads/{thread}/state").json()
    assert [i["id"] for i in state["interrupts"]] == [request["params"]["data"]["interrupt_id"]]
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]
    assert [c["name"] for c in state["values"]["messages"][1]["tool_calls"]] == ["task"]
    assert httpx.get(f"{base}/api/threads/{thread}").json()["status"] == "interrupted"

"""Approvals on a real model's path: `CHAT_MODEL=openai:gpt-5.4-mini` against a scripted OpenAI-compatible server on
loopback (tests/chat/support_openai_server.py), so langchain-openai streams the coordinator's Responses API output
(reasoning summaries, function calls) and the subagents' chat completions (tool-call chunks) over real HTTP.

Each decision is checked where the model sees it: the next request the server receives carries the tool's result
with the edited arguments, or the rejection's message."""

from __future__ import annotations

import httpx
import pytest

from tests.agentserver.support_sdk import SdkClient
from tests.chat.support_chat import (
    CHAT_ENV,
    command,
    last_run_events,
    new_thread,
    replay,
    start_run,
    wait_for_run_end,
)
from tests.chat.support_openai_server import REJECTED, ScriptedOpenAI
from tests.chat.test_js_approvals import js_approvals_report
from tests.support_processes import LiveServer

pytestmark = pytest.mark.live
MATH = "Calculate 42 * 17"
BOTH = "Research the abacus, and separately calculate 42 * 17."
APPROVE = {"decisions": [{"type": "approve"}]}
# A proxy nobody listens on: a request for anything but loopback (NO_PROXY) fails instead of leaving the machine.
NOWHERE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def openai_server():
    server = ScriptedOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def chat_server(openai_server, django_db_setup, django_db_blocker, tmp_path_factory):
    env = {**CHAT_ENV, "CHAT_MODEL": "openai:gpt-5.4-mini", "OPENAI_BASE_URL": openai_server.base_url,
           "OPENAI_API_KEY": "sk-scripted-loopback", "CHAT_APPROVE_TOOLS": "calculator,search_web",
           "HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "ALL_PROXY": NOWHERE, "NO_PROXY": "127.0.0.1,localhost",
           "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false",
           # Run-scoped replay, as the page (and the JS client's reload scenario) expect.
           "CHAT_REPLAY_SCOPE": "run"}
    with django_db_blocker.unblock():
        started = LiveServer(env=env, log_path=tmp_path_factory.mktemp("openai-chat") / "server.log").start()
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def fresh_requests(openai_server):
    """Each test reads only the requests its own runs sent."""
    with openai_server.lock:
        openai_server.requests.clear()
    return openai_server


def run_until_waiting(base: str, thread: str, text: str = MATH, **params) -> list[dict]:
    start_run(base, thread, text, **params)
    assert wait_for_run_end(base, thread)["status"] == "interrupted"
    return [e for e in last_run_events(replay(base, thread)) if e["method"] == "input.requested"]


def answer(base: str, thread: str, request: dict, decision: dict) -> None:
    body = command(base, thread, "input.respond", {
        "namespace": request["params"]["namespace"], "interrupt_id": request["params"]["data"]["interrupt_id"],
        "response": {"decisions": [decision]}}).json()
    assert body["type"] == "success", body
    assert wait_for_run_end(base, thread)["status"] == "completed"


def reply(base: str, thread: str) -> str:
    content = command(base, thread, "state.get").json()["result"]["values"]["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("text"))


def calculator_ran(base: str, thread: str) -> bool:
    return any(e["params"]["data"].get("event") == "tool-started" and e["params"]["data"].get("tool_name") ==
               "calculator" for e in replay(base, thread, {"channels": ["tools"]}))


def tool_results(openai_server: ScriptedOpenAI, tool: str) -> list[str]:
    """What the model offering `tool` was sent as tool results, in its newest request."""
    *_, newest = openai_server.seen(tool)
    return [m.content for m in newest.messages if m.role == "tool"]


def test_the_coordinator_streams_reasoning_and_a_subagents_tool_call_waits_with_the_models_arguments(
        base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    action = request["params"]["data"]["payload"]["action_requests"][0]
    # The arguments were assembled from the streamed tool-call chunks.
    assert (action["name"], action["args"]) == ("calculator", {"expression": "42 * 17"})
    assert request["params"]["namespace"][0].startswith("tools:")
    # The coordinator spoke the Responses API, the subagent chat completions, both streamed.
    paths = [(r.path, r.body.get("stream")) for r in openai_server.requests]
    assert paths == [("/v1/responses", True), ("/v1/chat/completions", True)]
    events = replay(base, thread, {"channels": ["messages"]})
    assert "**Delegating** I will ask math-whiz." in reasoning_text(events)


def reasoning_text(events: list[dict]) -> str:
    """The reasoning the coordinator's message events carried."""
    text = []
    for event in events:
        data = event["params"]["data"]
        block = data.get("content_block") or data.get("delta") or {}
        if event["params"]["namespace"] == [] and "reasoning" in str(block.get("type", "")):
            text.append(block.get("reasoning", "") or block.get("text", ""))
    return "".join(text)


def test_approving_a_subagents_call_runs_it_and_the_model_is_sent_its_result(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    answer(base, thread, request, {"type": "approve"})
    assert tool_results(openai_server, "calculator") == ["714"]
    assert tool_results(openai_server, "task") == ["42 * 17 = 714"]
    assert reply(base, thread) == "42 * 17 = 714"
    assert calculator_ran(base, thread)


def test_an_edited_call_runs_with_the_edited_arguments(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    answer(base, thread, request, {"type": "edit", "edited_action": {"name": "calculator",
                                                                    "args": {"expression": "6 * 7"}}})
    (result,) = tool_results(openai_server, "calculator")
    assert "6 * 7" in result and result.rstrip().endswith("42") and "714" not in result
    assert reply(base, thread) == "6 * 7 = 42"


def test_a_rejected_call_does_not_run_and_the_model_is_sent_the_reason(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    answer(base, thread, request, {"type": "reject", "message": "not now"})
    (result,) = tool_results(openai_server, "calculator")
    assert result.startswith(REJECTED) and "not now" in result
    text = reply(base, thread)
    assert text == "I did not run calculator: you rejected the call (not now). Instead I will answer without it."
    assert not calculator_ran(base, thread)


def test_a_response_in_the_tools_place_is_sent_to_the_model_as_the_result(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    answer(base, thread, request, {"type": "respond", "message": "It is 714, I checked by hand."})
    assert tool_results(openai_server, "calculator") == ["It is 714, I checked by hand."]
    assert not calculator_ran(base, thread)


@pytest.mark.parametrize(("decision", "expected"), [
    ({"type": "approve"}, "42 * 17 = 714"),
    ({"type": "edit", "edited_action": {"name": "task", "args": {"description": "Calculate 6 * 7",
                                                                 "subagent_type": "math-whiz"}}}, "6 * 7 = 42"),
])
def test_the_coordinators_delegation_approved_or_edited_reaches_the_subagent(base, openai_server, decision,
                                                                             expected):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread, config={"configurable": {"approve_tools": ["task"]}})
    assert request["params"]["namespace"] == []
    assert request["params"]["data"]["payload"]["action_requests"][0]["name"] == "task"
    answer(base, thread, request, decision)
    (math_request,) = openai_server.seen("calculator")[:1]
    assert math_request.messages[-1].content == decision.get("edited_action", {}).get(
        "args", {}).get("description", MATH)
    assert reply(base, thread) == expected


def test_the_coordinators_rejected_delegation_is_sent_back_to_it_with_the_reason(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread, config={"configurable": {"approve_tools": ["task"]}})
    answer(base, thread, request, {"type": "reject", "message": "no delegating"})
    assert openai_server.seen("calculator") == []
    (result,) = tool_results(openai_server, "task")
    assert result.startswith(REJECTED) and "no delegating" in result
    assert reply(base, thread) == ("I did not delegate: you rejected the call (no delegating). Instead I will answer "
                                   "without a subagent.")


def test_two_subagents_waiting_at_once_are_resumed_by_one_sdk_command(base, openai_server):
    client = SdkClient("sync", f"{base}/api")
    try:
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, "agent", input={"messages": [{"type": "human", "content": BOTH}]})
        interrupts = client.threads.get_state(thread_id)["interrupts"]
        names = {i["value"]["action_requests"][0]["name"]: i["id"] for i in interrupts}
        assert sorted(names) == ["calculator", "search_web"]
        edit = {"decisions": [{"type": "edit", "edited_action": {"name": "calculator",
                                                                  "args": {"expression": "6 * 7"}}}]}
        reject = {"decisions": [{"type": "reject", "message": "no web today"}]}
        client.runs.wait(thread_id, "agent", command={"resume": {names["calculator"]: edit,
                                                                 names["search_web"]: reject}})
        assert client.threads.get(thread_id)["status"] == "idle"
    finally:
        client.close()
    # runs.wait streams no messages, so langchain-openai asked for whole responses: the API's other shape.
    assert {(r.path, bool(r.body.get("stream"))) for r in openai_server.requests} == {
        ("/v1/responses", False), ("/v1/chat/completions", False)}
    (calculated,) = tool_results(openai_server, "calculator")
    (searched,) = tool_results(openai_server, "search_web")
    assert calculated.rstrip().endswith("42") and "no web today" in searched
    reported = tool_results(openai_server, "task")
    assert sorted(reported) == ["6 * 7 = 42", "I did not run search_web: you rejected the call (no web today). "
                                               "Instead I will answer without it."]


def test_every_model_call_of_a_turn_reaches_the_loopback_server(base, openai_server):
    thread = new_thread()
    (request,) = run_until_waiting(base, thread)
    answer(base, thread, request, {"type": "approve"})
    # Every model call reached the scripted server (a call for anywhere else would go to NOWHERE and fail the run).
    assert len(openai_server.requests) == 4
    assert httpx.get(f"{base}/api/threads/{thread}").json()["status"] == "idle"


@pytest.mark.node
@pytest.mark.no_postgres_pass  # as tests/chat/test_js_approvals.py: the client does not depend on the database
def test_the_official_js_client_answers_approvals_on_the_real_model_path(base, openai_server):
    """tests/js/approvals_client.mjs unchanged (tests/chat/test_js_approvals.py reads its report in detail): approve,
    edit, reject, a stale answer, the coordinator's delegation, a batch of two and a reload, all on the real path."""
    report = js_approvals_report(base)
    assert report["stale"]["error"] == "no_such_interrupt"
    assert [report[name]["text"] for name in ("approve", "edit", "reject")] == [
        "42 * 17 = 714", "6 * 7 = 42", "I did not run calculator: you rejected the call (not now). Instead I will "
                                       "answer without it."]
    assert sorted(a["tool"] for a in report["batch"]["asked"]) == ["calculator", "search_web"]
    # Every model call of the seven scenarios reached the scripted server.
    assert {r.path for r in openai_server.requests} == {"/v1/responses", "/v1/chat/completions"}


def test_the_scripted_server_refuses_what_openai_refuses_a_tool_result_without_its_call(openai_server):
    """So that a call lost after a decision (its result without the call, or the call without a result) fails the
    tests above as it would fail against OpenAI."""
    orphan = {"model": "gpt-5.4-mini", "messages": [
        {"role": "user", "content": MATH}, {"role": "tool", "tool_call_id": "call_1", "content": "714"}]}
    unanswered = {"model": "gpt-5.4-mini", "input": [
        {"role": "user", "content": MATH}, {"type": "function_call", "call_id": "call_1", "name": "task",
                                            "arguments": "{}"}, {"role": "user", "content": "and?"}]}
    headers = {"Authorization": "Bearer sk-scripted-loopback"}
    for path, body in (("chat/completions", orphan), ("responses", unanswered)):
        refused = httpx.post(f"{openai_server.base_url}/{path}", json=body, headers=headers)
        assert refused.status_code == 400 and refused.json()["error"]["type"] == "invalid_request_error"

"""GET /api/threads/:id/approvals, what the chat page reads after a reload: the approvals a thread waits on and
those already answered, with their answers and the subagent's `task` call, only for the thread's owner."""

from __future__ import annotations

import httpx
import pytest

from tests.chat.support_chat import command, live_chat_server, new_thread, start_run, wait_for_run_end

pytestmark = pytest.mark.live
chat_server = live_chat_server(CHAT_APPROVE_TOOLS="calculator,search_web")
BOTH = "Research the abacus, and separately calculate 42 * 17."


def approvals(base: str, thread: str, headers: dict | None = None) -> httpx.Response:
    return httpx.get(f"{base}/api/threads/{thread}/approvals", headers=headers)


def task_calls(base: str, thread: str) -> dict[str, str]:
    """The coordinator's `task` calls: subagent type → tool call id."""
    messages = command(base, thread, "state.get").json()["result"]["values"]["messages"]
    return {c["args"]["subagent_type"]: c["id"] for m in messages for c in m.get("tool_calls") or ()
            if c["name"] == "task"}


def test_waiting_approvals_name_their_subagents_call_and_answered_ones_keep_their_answer(base):
    thread = new_thread()
    start_run(base, thread, BOTH)
    assert wait_for_run_end(base, thread)["status"] == "interrupted"
    waiting = approvals(base, thread).json()["approvals"]
    assert [a["status"] for a in waiting] == ["pending", "pending"]
    by_tool = {a["request"]["action_requests"][0]["name"]: a for a in waiting}
    calls = task_calls(base, thread)
    assert by_tool["search_web"]["task_call_id"] == calls["researcher"]
    assert by_tool["calculator"]["task_call_id"] == calls["math-whiz"]
    assert all(len(a["namespace"]) == 1 and a["response"] is None for a in waiting)

    reject, approve = {"decisions": [{"type": "reject", "message": "not now"}]}, {"decisions": [{"type": "approve"}]}
    responses = [{"interrupt_id": by_tool["calculator"]["interrupt_id"], "response": reject},
                 {"interrupt_id": by_tool["search_web"]["interrupt_id"], "response": approve}]
    assert command(base, thread, "input.respond", {"responses": responses}).json()["type"] == "success"
    assert wait_for_run_end(base, thread)["status"] == "completed"
    answered = {a["interrupt_id"]: a for a in approvals(base, thread).json()["approvals"]}
    assert answered[by_tool["calculator"]["interrupt_id"]]["status"] == "answered"
    assert answered[by_tool["calculator"]["interrupt_id"]]["response"] == reject
    assert answered[by_tool["search_web"]["interrupt_id"]]["request"] == by_tool["search_web"]["request"]


def test_a_thread_without_approvals_has_none_and_someone_elses_is_not_found(base, make_client, workspace):
    owner = {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key}
    thread = new_thread()
    start_run(base, thread, "Hello", headers=owner)
    assert wait_for_run_end(base, thread, headers=owner)["status"] == "completed"
    assert approvals(base, thread, owner).json() == {"approvals": []}
    refused = approvals(base, thread)
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"
    assert approvals(base, new_thread()).status_code == 404

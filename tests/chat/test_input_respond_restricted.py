"""`input.respond` refuses a decision the interrupt does not allow (its `review_configs`), in the protocol's error
shape, and leaves the interrupt waiting for an allowed one; the Agent Server API sees the same interrupt."""

from __future__ import annotations

import httpx
import pytest

from tests.chat.support_chat import command, last_run_events, live_chat_server, new_thread, replay, wait_for_run_end

pytestmark = pytest.mark.live
chat_server = live_chat_server(CHAT_GRAPH="tests/chat/graphs.py:review_graph")


def asked(base: str, thread: str) -> dict:
    started = command(base, thread, "run.start", {"input": {"messages": []}}).json()
    assert started["type"] == "success", started
    assert wait_for_run_end(base, thread)["status"] == "interrupted"
    (request,) = [e for e in last_run_events(replay(base, thread)) if e["method"] == "input.requested"]
    return request["params"]["data"]


@pytest.mark.parametrize("decision", [
    {"type": "edit", "edited_action": {"name": "deploy", "args": {"target": "staging"}}},
    {"type": "respond", "message": "done by hand"},
])
def test_a_decision_the_interrupt_does_not_allow_is_invalid_argument_and_it_keeps_waiting(base, decision):
    thread = new_thread()
    request = asked(base, thread)
    refused = command(base, thread, "input.respond", {"interrupt_id": request["interrupt_id"],
                                                      "response": {"decisions": [decision]}})
    assert refused.status_code == 200
    body = refused.json()
    assert body["type"] == "error" and body["error"] == "invalid_argument", body
    assert "must be one of ['approve', 'reject']" in body["message"]
    assert httpx.get(f"{base}/api/threads/{thread}").json()["status"] == "interrupted"

    allowed = command(base, thread, "input.respond", {"interrupt_id": request["interrupt_id"],
                                                      "response": {"decisions": [{"type": "reject"}]}}).json()
    assert allowed["type"] == "success", allowed
    assert wait_for_run_end(base, thread)["status"] == "completed"
    assert command(base, thread, "state.get").json()["result"]["values"]["decision"] == "reject"

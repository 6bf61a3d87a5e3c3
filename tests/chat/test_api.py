"""The chat routes against a live server: state, threads, commands, SSE framing and resume, history, delete."""

from __future__ import annotations

import json
import random
import uuid

import httpx
import pytest

from agentruntime.models import ChatEvent, ChatThread, Checkpoint
from tests.chat.support_chat import (
    EXAMPLE,
    command,
    is_root_terminal,
    live_chat_server,
    new_thread,
    replay,
    run_to_end,
    start_run,
    stream_events,
    wait_for_run_end,
)

pytestmark = pytest.mark.live
chat_server = live_chat_server()


def test_the_state_of_an_unknown_thread_is_404_in_the_agent_servers_shape(base):
    thread = new_thread()
    response = httpx.get(f"{base}/api/threads/{thread}/state")
    assert response.status_code == 404 and response.json() == {"detail": f"Thread with ID {thread} not found"}


def test_posting_state_bootstraps_a_thread_that_get_then_returns(base):
    thread = new_thread()
    created = httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}})
    assert created.status_code == 200
    state = httpx.get(f"{base}/api/threads/{thread}/state").json()
    assert state["values"]["messages"] == [] and state["checkpoint"]["thread_id"] == thread
    assert state["checkpoint"]["checkpoint_id"] == created.json()["checkpoint"]["checkpoint_id"]
    assert set(state) == {"values", "next", "tasks", "checkpoint", "metadata", "created_at", "parent_checkpoint",
                          "interrupts", "checkpoint_id", "parent_checkpoint_id"}


def test_a_state_update_the_graph_cannot_apply_is_400_and_a_malformed_one_422(base):
    thread = new_thread()
    httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}})
    response = httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}, "as_node": "nope"})
    assert response.status_code == 400 and response.json() == {"detail": "Node nope does not exist"}
    response = httpx.post(f"{base}/api/threads/{thread}/state", json={"values": 3})
    assert response.status_code == 422


def test_a_run_streams_protocol_events_as_sse_frames(base):
    thread = new_thread()
    start_run(base, thread)
    events, frames, response = stream_events(f"{base}/api/threads/{thread}/stream",
                                             {"channels": ["lifecycle", "messages", "tools", "values"]})
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"].startswith("no-cache")
    assert response.headers["x-accel-buffering"] == "no"
    assert frames[0].comments and frames[0].data is None
    data_frames = [f for f in frames if f.data is not None]
    assert all(f.id == str(f.data["seq"]) == f.data["event_id"] and f.event == "message" for f in data_frames)
    assert events[0]["params"]["data"]["event"] == "running" and is_root_terminal(events[-1])
    assert events[-1]["params"]["data"]["event"] == "completed"
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})


def test_seq_keeps_growing_across_runs_and_every_event_is_stored_once(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 1")
    run_to_end(base, thread, "calculate 2 + 2")
    seqs = [e["seq"] for e in replay(base, thread)]
    assert seqs == list(range(1, len(seqs) + 1))
    assert ChatEvent.objects.filter(thread_id=thread).count() == len(seqs)
    terminals = [e for e in replay(base, thread, {"channels": ["lifecycle"], "namespaces": [[]], "depth": 0})]
    assert [e["params"]["data"]["event"] for e in terminals] == ["running", "completed", "running", "completed"]


def test_a_stream_resumes_after_since_or_last_event_id_at_random_cut_points(base):
    thread = new_thread()
    run_to_end(base, thread)
    channels = {"channels": ["lifecycle", "messages", "tools", "values", "updates", "checkpoints"]}
    reference = replay(base, thread, channels)
    generator = random.Random(8)
    cuts = sorted(generator.sample(range(1, reference[-1]["seq"]), 20))
    for i, cut in enumerate(cuts):
        expected = [e for e in reference if e["seq"] > cut]
        if i % 2:
            resumed = replay(base, thread, {**channels, "since": cut})
        else:
            resumed = replay(base, thread, channels, headers={"Last-Event-ID": str(cut)})
        assert resumed == expected, f"cut at {cut}"
    assert replay(base, thread, channels, headers={"Last-Event-ID": "-"}) == reference


def test_bad_stream_requests_are_400_in_the_protocols_shape(base):
    for body in ({"channels": []}, {"channels": ["bogus"]}, {"channels": ["values"], "depth": "x"}):
        response = httpx.post(f"{base}/api/threads/{new_thread()}/stream", json=body)
        assert response.status_code == 400 and response.json()["error"] == "invalid_argument"
    response = httpx.post(f"{base}/api/threads/{new_thread()}/stream", content=b"{not json")
    assert response.status_code == 400


def test_a_nul_in_a_message_is_refused_before_any_run_and_the_thread_takes_the_next_one(base):
    from agentruntime.models import ChatRun

    thread = new_thread()
    message = {"type": "human", "content": "what is 1+1 \u0000 ok"}
    response = httpx.post(f"{base}/api/threads/{thread}/commands", json={
        "id": 1, "method": "run.start", "params": {"assistant_id": "_", "input": {"messages": [message]}}})
    body = response.json()
    assert response.status_code == 200 and body["type"] == "error"  # the protocol's envelope, as for any bad body
    assert body["error"] == "invalid_argument" and "NUL" in body["message"]
    assert not ChatRun.objects.filter(thread_id=thread).exists()
    start_run(base, thread, "calculate 1 + 1")
    assert wait_for_run_end(base, thread)["status"] == "completed"


@pytest.mark.parametrize(("payload", "code"), [
    ({"id": 1, "method": "nope.nothing", "params": {}}, "unknown_command"),
    ({"id": 2, "method": "input.inject", "params": {}}, "not_supported"),
    ({"id": 9, "method": "input.respond", "params": {}}, "invalid_argument"),
    ({"id": -1, "method": "run.start", "params": {}}, "invalid_argument"),
    ({"id": 3, "params": {}}, "invalid_argument"),
    ({"id": 4, "method": "run.start", "params": []}, "invalid_argument"),
    ({"id": 5, "method": "run.start", "params": {"input": "hello"}}, "invalid_argument"),
    ({"id": 6, "method": "run.start", "params": {"input": {}, "config": {"configurable": {"checkpoint_id": 7}}}},
     "invalid_argument"),
    ({"id": 7, "method": "state.listCheckpoints", "params": {"limit": 0}}, "invalid_argument"),
    ({"id": 8, "method": "state.listCheckpoints", "params": {"limit": 2**63}}, "invalid_argument"),
])
def test_unknown_commands_and_bad_params_get_protocol_errors_with_http_200(base, payload, code):
    thread = new_thread()
    httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}})
    response = httpx.post(f"{base}/api/threads/{thread}/commands", json=payload)
    assert response.status_code == 200
    body = response.json()
    assert body["type"] == "error" and body["error"] == code and body["message"]
    assert body["id"] == (payload["id"] if isinstance(payload.get("id"), int) and payload["id"] >= 0 else
                          payload.get("id"))


def test_malformed_command_json_is_an_error_envelope(base):
    response = httpx.post(f"{base}/api/threads/{new_thread()}/commands", content=b"{oops")
    assert response.status_code == 200
    assert response.json() == {"type": "error", "id": None, "error": "invalid_argument",
                               "message": response.json()["message"]}


def test_a_second_run_start_while_a_run_is_active_is_refused(base):
    thread = new_thread()
    first = start_run(base, thread)
    refused = command(base, thread, "run.start", {"input": {"messages": [{"type": "human", "content": "hi"}]}},
                      command_id=9).json()
    assert refused["type"] == "error" and refused["id"] == 9 and first in refused["message"]
    assert "active" in refused["message"]
    wait_for_run_end(base, thread)
    assert command(base, thread, "run.start", {"input": {"messages": [{"type": "human", "content": "hi"}]}}
                   ).json()["type"] == "success"
    wait_for_run_end(base, thread)


def test_state_get_list_checkpoints_and_get_tree_describe_a_finished_run(base):
    thread = new_thread()
    events = run_to_end(base, thread)
    root = command(base, thread, "state.get", {"namespace": [], "keys": ["messages"]}).json()["result"]
    assert set(root["values"]) == {"messages"} and root["checkpoint"]["ns"] == ""
    subagent_ns = next(e["params"]["namespace"] for e in events if e["method"] == "lifecycle"
                       and e["params"]["namespace"])
    sub = command(base, thread, "state.get", {"namespace": subagent_ns}).json()["result"]
    assert sub["values"]["messages"][0]["type"] == "human"
    missing = command(base, thread, "state.get", {"namespace": ["tools:nope"]}).json()
    assert missing["error"] == "no_such_namespace"
    checkpoints = command(base, thread, "state.listCheckpoints", {"limit": 3}).json()["result"]["checkpoints"]
    assert len(checkpoints) == 3 and checkpoints[0]["step"] > checkpoints[-1]["step"]
    tree = command(base, thread, "agent.getTree").json()["result"]["tree"]
    assert tree["status"] == "completed" and tree["namespace"] == []
    assert sorted((c["graph_name"], c["status"]) for c in tree["children"]) == [
        ("math-whiz", "completed"), ("researcher", "completed")]
    unknown = command(base, thread, "agent.getTree", {"run_id": str(uuid.uuid4())}).json()
    assert unknown["error"] == "no_such_run"


def test_a_run_forks_from_an_earlier_checkpoint(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 2 + 2")
    first_turn = httpx.get(f"{base}/api/threads/{thread}/state").json()
    run_to_end(base, thread, "calculate 3 + 3")
    checkpoint_id = first_turn["checkpoint"]["checkpoint_id"]
    start_run(base, thread, "calculate 5 + 5", config={"configurable": {"checkpoint_id": checkpoint_id}})
    wait_for_run_end(base, thread)
    texts = [m["content"] for m in httpx.get(f"{base}/api/threads/{thread}/state").json()["values"]["messages"]
             if m["type"] == "human"]
    assert texts == ["calculate 2 + 2", "calculate 5 + 5"]
    unknown = command(base, thread, "run.start", {"input": None, "config": {"configurable": {
        "checkpoint_id": "1ef00000-0000-0000-0000-000000000000"}}}).json()
    assert unknown["error"] == "no_such_checkpoint"


def test_history_lists_states_newest_first_with_the_tasks_that_map_subagents(base):
    thread = new_thread()
    run_to_end(base, thread)
    history = httpx.post(f"{base}/api/threads/{thread}/history", json={"limit": 20}).json()
    steps = [h["metadata"]["step"] for h in history]
    assert steps == sorted(steps, reverse=True)
    pushes = [t for h in history for t in h["tasks"] if t["path"] and t["path"][0] == "__pregel_push"]
    assert len(pushes) == 2
    assert all(t["name"] == "tools" and t["id"] and t["result"]["messages"][0]["tool_call_id"] for t in pushes)
    older = httpx.post(f"{base}/api/threads/{thread}/history",
                       json={"limit": 2, "before": history[0]["checkpoint"]["checkpoint_id"]}).json()
    assert [h["checkpoint"]["checkpoint_id"] for h in older] == [h["checkpoint"]["checkpoint_id"]
                                                                 for h in history[1:3]]
    inputs = httpx.post(f"{base}/api/threads/{thread}/history", json={"metadata": {"source": "input"}}).json()
    assert inputs and all(h["metadata"]["source"] == "input" for h in inputs)
    assert httpx.post(f"{base}/api/threads/{new_thread()}/history", json={}).status_code == 404
    assert httpx.post(f"{base}/api/threads/{thread}/history", json={"limit": 0}).status_code == 422


def test_threads_are_listed_newest_first_with_their_titles(base):
    first, second = new_thread(), new_thread()
    httpx.post(f"{base}/api/threads/{first}/state", json={"values": {"messages": []}})
    run_to_end(base, second, "calculate 9 * 9")
    listed = httpx.get(f"{base}/api/threads").json()
    assert [t["id"] for t in listed][:2] == [second, first]
    assert listed[0]["title"] == "calculate 9 * 9" and listed[1]["title"] == "New conversation"
    assert all(set(t) == {"id", "title", "updatedAt"} for t in listed)


def test_delete_removes_the_thread_its_checkpoints_and_its_event_log(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 4 * 4")
    assert Checkpoint.objects.filter(thread_id=thread).exists() and ChatEvent.objects.filter(thread_id=thread).exists()
    assert httpx.delete(f"{base}/api/threads/{thread}").status_code == 204
    assert httpx.get(f"{base}/api/threads/{thread}/state").status_code == 404
    assert not Checkpoint.objects.filter(thread_id=thread).exists()
    assert not ChatEvent.objects.filter(thread_id=thread).exists()
    assert not ChatThread.objects.filter(pk=thread).exists()
    assert thread not in [t["id"] for t in httpx.get(f"{base}/api/threads").json()]
    assert httpx.delete(f"{base}/api/threads/{thread}").status_code == 404


def test_delete_stops_an_active_run_first(base):
    thread = new_thread()
    start_run(base, thread, EXAMPLE)
    assert httpx.delete(f"{base}/api/threads/{thread}").status_code == 204
    assert not ChatThread.objects.filter(pk=thread).exists()
    assert not Checkpoint.objects.filter(thread_id=thread).exists()


def test_oversized_bodies_are_413_and_wrong_methods_405(base):
    response = httpx.post(f"{base}/api/threads/{new_thread()}/commands", content=b"x" * (1024 * 1024 + 1))
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"
    response = httpx.get(f"{base}/api/threads/{new_thread()}/commands")
    assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"


def test_cancelling_an_unknown_run_is_404(base):
    thread = new_thread()
    httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}})
    # The Agent Server API's cancel answers it, in its shape.
    response = httpx.post(f"{base}/api/threads/{thread}/runs/{uuid.uuid4()}/cancel")
    assert response.status_code == 404 and response.json() == {"detail": "Not Found"}
    response = httpx.post(f"{base}/api/threads/{thread}/runs/not-a-uuid/cancel")
    assert response.status_code == 422 and response.json() == {"detail": "Invalid run ID: must be a UUID"}


def raw_request(method: str, base: str, target: str, body: dict) -> httpx.Response:
    """Send `target` exactly as given: httpx would resolve `..` away and re-encode the path."""
    with httpx.Client() as client:
        request = client.build_request(method, f"{base}/api/threads/placeholder", json=body,
                                       extensions={"target": target.encode()})
        return client.send(request)


@pytest.mark.parametrize("path", ["a" * 256, "..", ".", "%2E%2E", "a%2Fb", "a%2fstate"],
                         ids=["too-long", "dot-dot", "dot", "encoded-dot-dot", "encoded-slash", "slash-onto-a-route"])
def test_a_thread_id_that_can_name_no_thread_is_refused_in_each_apis_shape(base, path):
    message = "Invalid thread id: a thread id has 1 to 255 characters, contains no '/' and is not '.' or '..'."
    response = raw_request("POST", base, f"/api/threads/{path}/stream", {"channels": ["values"]})
    assert response.status_code == 400, response.text
    assert response.json() == {"error": "invalid_argument", "message": message}
    # State and delete are the Agent Server API's routes: its 422 {"detail"}. An encoded slash makes Django see
    # another path, which is refused there (404, 405 or 422), never served as thread "a".
    for method, suffix in (("GET", "/state"), ("POST", "/state"), ("DELETE", "")):
        response = raw_request(method, base, f"/api/threads/{path}{suffix}", {"values": {}})
        if "%2F" in path.upper():
            assert response.status_code in (404, 405, 422) and set(response.json()) == {"detail"}, response.text
        else:
            assert response.status_code == 422, (method, suffix, response.text)
            assert response.json() == {"detail": message}
    response = raw_request("POST", base, f"/api/threads/{path}/commands", {"id": 9, "method": "state.get",
                                                                           "params": {}})
    assert response.status_code == 200
    assert response.json() == {"type": "error", "id": 9, "error": "invalid_argument", "message": message}
    assert not ChatThread.objects.filter(pk__in=[path, "..", ".", "a", "a/b"]).exists()


def test_an_unknown_path_under_api_threads_is_404_in_the_agent_servers_shape(base):
    response = httpx.get(f"{base}/api/threads/{new_thread()}/nothing/here")
    assert response.status_code == 404 and set(response.json()) == {"detail"}


@pytest.mark.parametrize("cursor", [
    {"since": 2**63}, {"since": 10**30}, {"since": 10**6}, {"last_event_id": "99999999999999999999"},
    {"last_event_id": "1000000"}], ids=["since-2^63", "since-10^30", "since-past-end", "last-event-id-huge",
                                        "last-event-id-past-end"])
def test_a_cursor_past_the_newest_event_is_refused_before_any_byte(base, cursor):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 1")
    last_seq = ChatThread.objects.get(pk=thread).last_seq
    headers = {"Last-Event-ID": cursor["last_event_id"]} if "last_event_id" in cursor else {}
    body = {"channels": ["values"], **({"since": cursor["since"]} if "since" in cursor else {})}
    response = httpx.post(f"{base}/api/threads/{thread}/stream", content=json.dumps(body), headers=headers)
    assert response.status_code == 400, response.text
    assert response.json() == {"error": "invalid_argument", "message": (
        f"The cursor (since or Last-Event-ID) is past this thread's newest event ({last_seq}): resume from an "
        f"event id you received, or send none.")}
    # The newest event itself is a valid cursor: the stream opens and waits for what comes next.
    with httpx.stream("POST", f"{base}/api/threads/{thread}/stream", json={"channels": ["values"], "since": last_seq},
                      timeout=5) as stream:
        assert stream.status_code == 200

"""Runs of the Agent Server API through the official Python `langgraph_sdk` against a live server: background, wait,
stream (every stream mode), join, cancel, the multitask strategies and stateless runs."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import orjson
import pytest
from langgraph_sdk import get_client

from agentruntime.models import ChatEvent, ChatRun, ChatThread, Checkpoint, CheckpointBlob, CheckpointWrite
from tests.agentserver.support_sdk import NESTED_SPEC
from tests.chat.support_chat import live_chat_server

pytestmark = pytest.mark.live
SLOW_SPEC = "./tests/agentserver/project/graphs.py:slow_graph"
# Webhooks go through the egress guard: the test's receiver on loopback is allowlisted, nothing else is.
server = live_chat_server(CHAT_GRAPH=NESTED_SPEC, CHAT_ALLOW_ANONYMOUS="false", EGRESS_ALLOWLIST="127.0.0.1")


@pytest.fixture
def key(server, transactional_db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


@pytest.fixture
def sdk(server, key):
    loop = asyncio.new_event_loop()
    client = get_client(url=f"{server.url}/api", api_key=key)

    def run(coroutine):
        return loop.run_until_complete(coroutine)

    run.client = client
    yield run
    loop.run_until_complete(client.aclose())
    loop.close()


async def collect(stream) -> list[tuple[str, object]]:
    return [(part.event, part.data) async for part in stream]


def test_a_waited_run_answers_the_final_values_and_the_thread_keeps_them(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    result = sdk(client.runs.wait(thread["thread_id"], "agent", input={"steps": ["start"]}))
    assert result == {"steps": ["start", "outer", "start", "outer", "inner"]}
    state = sdk(client.threads.get_state(thread["thread_id"]))
    assert state["values"] == result
    found = sdk(client.threads.get(thread["thread_id"]))
    assert found["status"] == "idle" and found["metadata"]["graph_id"] == "agent"
    [run] = sdk(client.runs.list(thread["thread_id"]))
    assert run["status"] == "success" and run["assistant_id"] == found["metadata"]["assistant_id"]


def test_a_streamed_run_sends_metadata_first_then_each_requested_mode(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    parts = sdk(collect(client.runs.stream(thread["thread_id"], "agent", input={"steps": []},
                                           stream_mode=["values", "updates"])))
    events = [event for event, _ in parts]
    assert events[0] == "metadata" and set(events[1:]) == {"values", "updates"}
    assert parts[0][1]["attempt"] == 1
    updates = [data for event, data in parts if event == "updates"]
    assert updates == [{"outer_step": {"steps": ["outer"]}}, {"child": {"steps": ["outer", "inner"]}}]
    assert [data for event, data in parts if event == "values"][-1] == {"steps": ["outer", "outer", "inner"]}


def test_subgraph_frames_carry_their_namespace_when_asked_for(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    parts = sdk(collect(client.runs.stream(thread["thread_id"], "agent", input={"steps": []},
                                           stream_mode="updates", stream_subgraphs=True)))
    names = [event for event, _ in parts]
    assert any(name.startswith("updates|child:") for name in names)


def test_a_background_run_is_pending_or_running_then_joined(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    run = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": ["x"]}))
    assert run["status"] in ("pending", "running", "success") and run["kwargs"]["stream_mode"] == ["values"]
    result = sdk(client.runs.join(thread["thread_id"], run["run_id"]))
    assert result["steps"][-1] == "inner"
    assert sdk(client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    sdk(client.runs.delete(thread["thread_id"], run["run_id"]))
    assert sdk(client.runs.list(thread["thread_id"])) == []


def test_a_stateless_run_deletes_its_thread_unless_kept(sdk):
    client = sdk.client
    result = sdk(client.runs.wait(None, "agent", input={"steps": []}))
    assert result["steps"] == ["outer", "outer", "inner"]
    assert not ChatThread.objects.filter(runs__kind="agent_server").exists()
    kept = sdk(client.runs.wait(None, "agent", input={"steps": []}, on_completion="keep"))
    assert kept["steps"] == ["outer", "outer", "inner"]
    assert ChatThread.objects.filter(runs__kind="agent_server").count() == 1


def test_a_stateless_run_leaves_no_thread_run_event_or_checkpoint_behind(sdk):
    client = sdk.client
    kept = sdk(client.threads.create())
    result = sdk(client.runs.wait(None, "agent", input={"steps": []}))
    assert result["steps"] == ["outer", "outer", "inner"]
    assert list(ChatThread.objects.values_list("id", flat=True)) == [kept["thread_id"]]
    assert not ChatRun.objects.exists() and not ChatEvent.objects.exists()
    for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
        assert not model.objects.exists(), model.__name__


def test_unknown_assistants_threads_runs_and_stream_modes_are_refused_in_the_agent_servers_shapes(sdk, server, key):
    client = sdk.client
    thread = sdk(client.threads.create())
    url = f"{server.url}/api/threads/{thread['thread_id']}/runs"
    headers = {"X-Api-Key": key}
    answer = httpx.post(url, json={"assistant_id": "nope"}, headers=headers)
    assert answer.status_code == 422 and answer.json()["detail"].startswith("Invalid assistant: 'nope'.")
    answer = httpx.post(url, json={"assistant_id": str(uuid.uuid4())}, headers=headers)
    assert answer.status_code == 404 and "detail" in answer.json()
    answer = httpx.post(f"{server.url}/api/threads/{uuid.uuid4()}/runs", json={"assistant_id": "agent"},
                        headers=headers)
    assert answer.status_code == 404 and answer.json() == {"detail": "Thread or assistant not found."}
    answer = httpx.post(url, json={"assistant_id": "agent", "stream_mode": ["sideways"]}, headers=headers)
    assert answer.status_code == 422
    answer = httpx.post(url, json={"assistant_id": "agent", "webhook": "http://169.254.169.254/x"},
                        headers=headers)
    assert answer.status_code == 422 and "Webhook URL refused" in answer.json()["detail"]
    answer = httpx.post(url, content=b"{not json", headers={**headers, "Content-Type": "application/json"})
    assert answer.status_code == 422
    answer = httpx.get(f"{url}/{uuid.uuid4()}", headers=headers)
    assert answer.status_code == 404
    answer = httpx.post(url, json={"assistant_id": "agent", "input": {"text": "x" * (1024 * 1024 + 1)}},
                        headers=headers)
    assert answer.status_code == 413 and "detail" in answer.json()


def test_a_second_run_on_a_busy_thread_is_rejected_or_queued(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    first = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, after_seconds=1))
    with pytest.raises(httpx.HTTPStatusError) as refused:
        sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, multitask_strategy="reject"))
    assert refused.value.response.status_code == 409
    second = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []},
                                    multitask_strategy="enqueue"))
    sdk(client.runs.join(thread["thread_id"], second["run_id"]))
    ordered = ChatRun.objects.filter(thread_id=thread["thread_id"]).order_by("finished_at")
    assert [str(r.pk) for r in ordered] == [first["run_id"], second["run_id"]]


def test_a_pending_run_cancelled_is_interrupted_and_a_rolled_back_one_is_gone(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    run = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, after_seconds=30))
    sdk(client.runs.cancel(thread["thread_id"], run["run_id"]))
    assert sdk(client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"
    other = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, after_seconds=30))
    sdk(client.runs.cancel(thread["thread_id"], other["run_id"], action="rollback"))
    with pytest.raises(httpx.HTTPStatusError) as gone:
        sdk(client.runs.get(thread["thread_id"], other["run_id"]))
    assert gone.value.response.status_code == 404


def test_a_delayed_run_whose_streaming_client_leaves_with_on_disconnect_cancel_ends_at_once(sdk, server, key):
    thread = sdk(sdk.client.threads.create())
    body = {"assistant_id": "agent", "input": {"steps": []}, "after_seconds": 60, "on_disconnect": "cancel"}
    with httpx.stream("POST", f"{server.url}/api/threads/{thread['thread_id']}/runs/stream", json=body,
                      headers={"X-Api-Key": key}, timeout=30) as response:
        assert response.status_code == 200
        next(response.iter_lines())  # the run exists: its metadata frame is on its way
    run = ChatRun.objects.get(thread_id=thread["thread_id"])
    for _ in range(100):
        run.refresh_from_db()
        if run.status != ChatRun.Status.PENDING:
            break
        time.sleep(0.05)
    assert run.status == ChatRun.Status.INTERRUPTED


def test_a_run_started_through_the_agent_server_is_seen_by_protocol_subscribers(sdk, server, key):
    client = sdk.client
    thread = sdk(client.threads.create())
    sdk(client.runs.wait(thread["thread_id"], "agent", input={"steps": []}))
    seen = []
    with httpx.stream("POST", f"{server.url}/api/threads/{thread['thread_id']}/stream",
                      json={"channels": ["lifecycle", "values"], "namespaces": [[]]},
                      headers={"X-Api-Key": key}, timeout=30) as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                event = orjson.loads(line[6:])
                seen.append((event["method"], event["params"]["data"]))
                if event["method"] == "lifecycle" and event["params"]["data"]["event"] != "running":
                    break
    assert seen[0] == ("lifecycle", {"event": "running", "graph_name": "nested"})
    assert seen[-1] == ("lifecycle", {"event": "completed", "graph_name": "nested"})
    assert ("values", {"steps": ["outer", "outer", "inner"]}) in seen


def test_joining_a_resumable_runs_stream_replays_it_and_resumes_after_the_last_event_id(sdk):
    client = sdk.client
    thread = sdk(client.threads.create())
    run = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, stream_resumable=True,
                                 stream_mode=["values", "updates"]))
    sdk(client.runs.join(thread["thread_id"], run["run_id"]))
    whole = sdk(collect(client.runs.join_stream(thread["thread_id"], run["run_id"])))
    assert [event for event, _ in whole][0] == "metadata" and len(whole) == 1 + 3 + 2
    seqs = list(ChatRun.objects.get(pk=run["run_id"]).events.filter(channel__startswith="as:")
                .order_by("seq").values_list("seq", flat=True))
    rest = sdk(collect(client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id=str(seqs[2]))))
    assert rest == whole[3:]
    # "-1" (what the JS SDK's useStream sends to rejoin after a reload) replays the run from its start.
    assert sdk(collect(client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1"))) == whole


def test_a_runs_webhook_gets_the_ended_run_with_the_threads_values(sdk, webhook_receiver):
    url, received, arrived = webhook_receiver
    client = sdk.client
    thread = sdk(client.threads.create())
    run = sdk(client.runs.create(thread["thread_id"], "agent", input={"steps": []}, webhook=url))
    assert arrived.wait(30)
    [payload] = received
    assert payload["run_id"] == run["run_id"] and payload["status"] == "success"
    assert payload["values"] == {"steps": ["outer", "outer", "inner"]} and payload["webhook_sent_at"]

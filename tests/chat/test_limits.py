"""A server configured tightly: a real model without its key, no anonymous access, few streams, short retention."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from agentruntime.models import ChatRun, ChatThread
from tests.chat.support_chat import (
    SseReader,
    command,
    last_run_events,
    live_chat_server,
    replay,
    start_run,
    wait_for_run_end,
)

pytestmark = pytest.mark.live
chat_server = live_chat_server(CHAT_MODEL="openai:gpt-5.4-mini", OPENAI_API_KEY="", CHAT_ALLOW_ANONYMOUS="false",
                               CHAT_MAX_STREAMS="2", CHAT_EVENT_RETENTION="12", CHAT_SSE_HEARTBEAT_SECONDS="0.3")


@pytest.fixture
def key(make_client, workspace):
    return {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key}


def test_a_model_without_its_key_fails_the_run_with_an_error_naming_the_variable(base, key):
    thread = str(uuid.uuid4())
    assert httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}},
                      headers=key).status_code == 200
    start_run(base, thread, "hello", headers=key)
    wait_for_run_end(base, thread, headers=key)
    events = last_run_events(replay(base, thread, headers=key))
    root = [e["params"]["data"] for e in events if e["method"] == "lifecycle" and e["params"]["namespace"] == []]
    assert [r["event"] for r in root] == ["running", "failed"]
    assert "OPENAI_API_KEY is not set" in root[-1]["error"] and "set OPENAI_API_KEY" in root[-1]["error"]
    assert ChatRun.objects.get(thread_id=thread).status == ChatRun.Status.FAILED


def test_anonymous_callers_are_401_when_anonymous_access_is_off(base):
    thread = str(uuid.uuid4())
    for response in (httpx.get(f"{base}/api/threads"),
                     httpx.post(f"{base}/api/threads/{thread}/stream", json={"channels": ["values"]}),
                     command(base, thread, "run.start", {"input": {}})):
        assert response.status_code == 401
        assert response.json()["error"] == "unauthenticated"
    # The state is the Agent Server API's route: its shape.
    response = httpx.get(f"{base}/api/threads/{thread}/state")
    assert response.status_code == 401 and response.json()["detail"].startswith("Authentication required")


def test_concurrent_streams_are_capped_per_caller(base, key, make_client, workspace):
    url = f"{base}/api/threads/{uuid.uuid4()}/stream"
    with httpx.Client(timeout=10) as client:
        first = client.send(client.build_request("POST", url, json={"channels": ["values"]}, headers=key),
                            stream=True)
        second = client.send(client.build_request("POST", url, json={"channels": ["values"]}, headers=key),
                             stream=True)
        third = client.post(url, json={"channels": ["values"]}, headers=key)
        assert (first.status_code, second.status_code) == (200, 200)
        assert third.status_code == 429 and third.json()["error"] == "too_many_streams"
        other = make_client(workspace, permissions=["chat:use"]).raw_key
        assert client.post(f"{base}/api/threads/{uuid.uuid4()}/state", json={},
                           headers={"X-Api-Key": other}).status_code == 200
        first.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            again = client.send(client.build_request("POST", url, json={"channels": ["values"]}, headers=key),
                                stream=True)
            if again.status_code == 200:
                again.close()
                break
            again.read()
            time.sleep(0.1)
        assert again.status_code == 200
        second.close()


def test_an_idle_stream_gets_comment_frames(base, key):
    comments = []
    with httpx.stream("POST", f"{base}/api/threads/{uuid.uuid4()}/stream", json={"channels": ["values"]},
                      headers=key, timeout=10) as response:
        reader = SseReader()
        for chunk in response.iter_text():
            comments += [c for frame in reader.feed(chunk) for c in frame.comments]
            if len(comments) >= 3:
                break
    assert comments[0] == "connected" and comments[1:] == ["heartbeat", "heartbeat"]


def test_retention_drops_whole_old_runs_and_an_expired_cursor_is_410(base, key):
    thread = str(uuid.uuid4())
    run_sizes = []
    for _ in range(3):
        start_run(base, thread, "hello", headers=key)
        wait_for_run_end(base, thread, headers=key)
        run_sizes.append(len(last_run_events(replay(base, thread, headers=key))))
    retained = replay(base, thread, headers=key)
    expired_through = ChatThread.objects.get(pk=thread).expired_through_seq
    assert expired_through > 0 and retained[0]["seq"] == expired_through + 1
    assert len(retained) <= 12 or len(retained) == run_sizes[-1]
    assert retained[0]["params"]["data"]["event"] == "running" and retained[0]["params"]["namespace"] == []
    for cursor in (0, expired_through - 1):
        response = httpx.post(f"{base}/api/threads/{thread}/stream", json={"channels": ["values"], "since": cursor},
                              headers=key)
        assert response.status_code == 410 and response.json()["error"] == "cursor_expired"
    response = httpx.post(f"{base}/api/threads/{thread}/stream", json={"channels": ["lifecycle"]},
                          headers={**key, "Last-Event-ID": str(expired_through - 1)})
    assert response.status_code == 410
    assert replay(base, thread, {"channels": ["values", "lifecycle", "updates", "checkpoints", "tasks", "messages",
                                              "tools", "input", "custom"], "since": expired_through},
                  headers=key) == retained

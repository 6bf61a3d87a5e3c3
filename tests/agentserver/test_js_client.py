"""The official JS SDK's `Client` (`@langchain/langgraph-sdk` 1.9.24 in Node, its default Agent Server mode) against
the service's own /api: create and join, stream modes, join with Last-Event-ID resume, cancel.

The same script runs against a deployed revision in tests/deployments/test_live_agent_server.py.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from chat.models import ChatRun
from tests.chat.chat_support import live_chat_server
from tests.chat.test_clients import JS_DIR, js_client_missing

pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
PROJECT_GRAPHS = "./tests/agentserver/project/graphs.py"
chat_server = live_chat_server(CHAT_GRAPH=f"{PROJECT_GRAPHS}:chat_graph", CHAT_ALLOW_ANONYMOUS="false")
slow_server = live_chat_server(CHAT_GRAPH=f"{PROJECT_GRAPHS}:slow_graph", CHAT_ALLOW_ANONYMOUS="false")


def run_agent_server_script(*, chat: tuple[str, str], slow: tuple[str, str], api_key: str) -> dict:
    """Run tests/js/agent_server_client.mjs with (api url, assistant) for the chat and slow graphs; its report."""
    missing = js_client_missing()
    if missing:
        pytest.skip(f"JS client tests need Node and tests/js packages: {missing}")
    env = {**os.environ, "CHAT_API_URL": chat[0], "CHAT_ASSISTANT": chat[1], "SLOW_API_URL": slow[0],
           "SLOW_ASSISTANT": slow[1], "AS_API_KEY": api_key}
    finished = subprocess.run(["node", "agent_server_client.mjs"], cwd=JS_DIR, capture_output=True, text=True,
                              timeout=180, env=env)
    lines = finished.stdout.strip().splitlines()
    assert lines, finished.stderr
    report = json.loads(lines[-1])
    assert finished.returncode == 0 and "failure" not in report, report.get("failure") or finished.stderr
    return report


def assert_report(report: dict) -> None:
    """What every server must answer the script (the service's /api and a deployment alike)."""
    join = report["join"]
    assert join["thread_metadata"]["via"] == "js-sdk"
    assert join["created_status"] in ("pending", "running") and join["final_status"] == "success"
    assert [(m["type"], m["content"]) for m in join["messages"]] == [
        ("human", "hello brave new world"), ("ai", "world new brave hello")]

    stream = report["stream"]
    assert stream["events"][0] == "metadata" and stream["metadata"]["run_id"] == stream["created"]["run_id"]
    assert {"values", "updates", "messages"} <= set(stream["events"])
    tokens = [t for t in stream["tokens"] if t["type"] in ("AIMessageChunk", "ai")]
    # The scripted model streams word by word: several chunks of one message, from the `respond` node.
    assert len(tokens) >= 4 and len({t["id"] for t in tokens}) == 1 and {t["node"] for t in tokens} == {"respond"}
    assert "".join(t["content"] for t in tokens).split() == ["four", "three", "two", "one"]
    assert [list(update) for update in stream["updates"]] == [["respond"]]
    # The second run on the thread sees the first one's messages too.
    assert [m["content"] for m in stream["last_values"]["messages"]] == [
        "hello brave new world", "world new brave hello", "one two three four", "four three two one"]

    resume = report["resume"]
    assert resume["final_status"] == "success"
    ids = [p["id"] for p in resume["whole"]]
    assert all(ids) and len(set(ids)) == len(ids)
    # The first join stopped after two ticks; the second picks up right after the last id it had seen.
    assert [p["id"] for p in resume["rest"]] == ids[ids.index(resume["last_event_id"]) + 1:]
    assert resume["first"] + resume["rest"] == resume["whole"]
    ticks = [p["data"]["tick"] for p in resume["whole"] if p["event"] == "custom"]
    assert ticks == [1, 2, 3, 4, 5]
    assert resume["whole"][-1]["event"] == "values" and resume["whole"][-1]["data"]["ticks"] == [1, 2, 3, 4, 5]

    cancel = report["cancel"]
    assert cancel["seen_status"] == "running" and cancel["final_status"] == "interrupted"
    # Cancelled between two ticks, its last checkpoint still has a next node: "interrupted", as langgraph dev says.
    assert cancel["thread_status"] == "interrupted"


@pytest.fixture
def api_key(transactional_db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


def test_the_official_js_client_creates_joins_streams_resumes_and_cancels_runs(chat_server, slow_server, api_key):
    report = run_agent_server_script(chat=(f"{chat_server.url}/api", "agent"), slow=(f"{slow_server.url}/api", "agent"),
                                     api_key=api_key)
    assert_report(report)
    assert ChatRun.objects.get(pk=report["cancel"]["run_id"]).cancel_requested_at is not None

"""LangChain's own clients against a live server: the JS client (`@langchain/langgraph-sdk` 1.9.24 in Node) through a
whole conversation, and the Python `langgraph-sdk` through /stream/events."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid

import pytest
from langgraph_sdk import get_client

from agentruntime.models import ChatEvent, ChatRun, ChatThread
from tests.chat.support_chat import EXAMPLE, live_chat_server
from tests.support_processes import BASE_DIR

pytestmark = pytest.mark.live
JS_DIR = BASE_DIR / "tests" / "js"
# Four times the examples' latency (a search takes 1.2 s): "stop mid-run" must catch a subagent at work even when
# the client's process waits for a core. At half of it, and once at the full latency, a busy machine let the run
# finish before the cancel arrived.
chat_server = live_chat_server(CHAT_AGENT_DELAY_SCALE="4")
run_scoped_server = live_chat_server(CHAT_AGENT_DELAY_SCALE="4", CHAT_REPLAY_SCOPE="run")


def js_client_missing() -> str | None:
    node = shutil.which("node")
    if node is None:
        return "node is not installed (Node.js >= 20 is needed)"
    major = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True)
    if int(major.stdout.strip() or 0) < 20:
        return f"Node.js {major.stdout.strip()} is older than 20"
    package = JS_DIR / "node_modules" / "@langchain" / "langgraph-sdk" / "package.json"
    if not package.exists() or json.loads(package.read_text())["version"] != "1.9.24":
        return "the npm packages are not installed: run scripts/test-deps.d/10-node.sh (npm ci in tests/js)"
    return None


def ai_text(message: dict) -> str:
    return message["text"]


def run_js_client(base: str, **env: str) -> dict:
    missing = js_client_missing()
    if missing:
        pytest.skip(f"JS client tests need Node and tests/js packages: {missing}")
    finished = subprocess.run(["node", "chat_client.mjs"], cwd=JS_DIR, capture_output=True, text=True, timeout=180,
                              env={**os.environ, "CHAT_API_URL": f"{base}/api", **env})
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    assert finished.returncode == 0 and "failure" not in report, report.get("failure") or finished.stderr
    return report


def assert_stopped(stop: dict) -> None:
    # stop() cancels without waiting (202): the client is done before the server has recorded the run's end.
    deadline = time.monotonic() + 5
    while ChatRun.objects.get(pk=stop["run_id"]).status == ChatRun.Status.RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = ChatRun.objects.get(pk=stop["run_id"])
    assert stopped.status == ChatRun.Status.INTERRUPTED and stopped.cancel_requested_at is not None
    terminal = ChatEvent.objects.filter(run=stopped).order_by("-seq").first()
    assert json.loads(terminal.payload)["params"]["data"]["event"] == "interrupted"
    assert not stop["is_loading"] and stop["error"] is None


@pytest.mark.node
@pytest.mark.no_postgres_pass
@pytest.mark.parametrize("auth", ["anonymous", "api key"])
def test_the_official_js_client_holds_a_whole_conversation(chat_server, transactional_db, make_client, workspace,
                                                           auth):
    key = make_client(workspace, permissions=["chat:use"]).raw_key if auth == "api key" else None
    report = run_js_client(chat_server.url, **({"CHAT_API_KEY": key} if key else {}))
    thread = ChatThread.objects.get(pk=report["thread_id"])
    assert report["bootstrap"] == "created"
    assert (thread.owner_kind, thread.workspace_id) == (("workspace", workspace.id) if auth == "api key"
                                                        else ("anonymous", None))

    turn1 = report["turn1"]
    assert [m["type"] for m in turn1["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    delegations = [call["args"]["subagent_type"] for call in turn1["messages"][1]["tool_calls"]]
    assert delegations == ["researcher", "math-whiz"]
    assert turn1["messages"][1]["reasoning"] and turn1["messages"][-1]["reasoning"]
    answer = ai_text(turn1["messages"][-1])
    assert "42 * 17 = 714" in answer and "no real findings about LangGraph streaming" in answer
    assert not turn1["is_loading"] and turn1["error"] is None
    # The coordinator's own tool calls are its two delegations; the subagents' tool calls stay theirs.
    assert sorted((c["name"], c["status"]) for c in turn1["tool_calls"]) == [("task", "finished")] * 2

    subagents = {s["name"]: s for s in turn1["subagents"]}
    assert set(subagents) == {"researcher", "math-whiz"}
    for name, tool in (("researcher", "search_web"), ("math-whiz", "calculator")):
        view = subagents[name]
        assert view["status"] == "complete" and view["namespace"][0].startswith("tools:")
        assert [m["type"] for m in view["messages"]] == ["human", "ai", "tool", "ai"]
        assert view["messages"][1]["tool_calls"][0]["name"] == tool
        assert view["tool_calls"] == [{"name": tool, "status": "finished"}]
    assert "714" in subagents["math-whiz"]["messages"][2]["text"]

    assert "7 * 6 = 42" in ai_text(report["turn2"]["messages"][-1])

    assert_stopped(report["stop"])

    reload = report["reload"]
    assert [m["type"] for m in reload["messages"]][:9] == [m["type"] for m in report["turn2"]["messages"]]
    rediscovered = [s["name"] for s in reload["subagents"]]
    assert sorted(rediscovered) == ["math-whiz", "math-whiz", "researcher"]
    assert all([m["type"] for m in s["messages"]] == ["human", "ai", "tool", "ai"] for s in reload["subagents"])


async def _stream_one_run(base: str, thread_id: str, text: str, projection: str) -> tuple[dict, list]:
    """Start a run with the Python SDK and read one projection (`messages` or `subagents`) and the output."""
    client = get_client(url=f"{base}/api")
    async with client.threads.stream(thread_id, assistant_id="agent") as thread:
        await thread.run.start(input={"messages": [{"type": "human", "content": text}]})
        seen = []

        async def read():
            async for item in getattr(thread, projection):
                if projection == "messages":
                    seen.append((asyncio.ensure_future(item.text), asyncio.ensure_future(item.reasoning)))
                else:
                    seen.append(item.namespace)

        reader = asyncio.create_task(read())
        output = await asyncio.wait_for(thread.output, 60)
        await asyncio.wait({reader}, timeout=10)
        if projection == "messages":
            seen = [(await text_future, await reasoning_future) for text_future, reasoning_future in seen]
    return output, seen


def test_the_python_sdk_streams_a_run_through_stream_events(chat_server, transactional_db):
    output, texts = asyncio.run(_stream_one_run(chat_server.url, str(uuid.uuid4()), EXAMPLE, "messages"))
    assert [m["type"] for m in output["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    assert len(texts) == 2 and texts[0][1].startswith("The request needs") and "714" in texts[1][0]
    _, subagents = asyncio.run(_stream_one_run(chat_server.url, str(uuid.uuid4()), EXAMPLE, "subagents"))
    assert len(subagents) == 2 and all(ns[0].startswith("tools:") for ns in subagents)


@pytest.mark.node
@pytest.mark.no_postgres_pass
def test_with_run_scoped_replay_a_reloaded_page_keeps_talking_and_stopping(run_scoped_server, transactional_db):
    report = run_js_client(run_scoped_server.url, CHAT_JS_SCENARIO="reload-first")
    assert sorted(s["name"] for s in report["reload"]["subagents"]) == ["math-whiz", "researcher"]
    turn2 = report["turn2"]
    assert len(turn2["messages"]) == 9 and "7 * 6 = 42" in ai_text(turn2["messages"][-1])
    assert_stopped(report["stop"])

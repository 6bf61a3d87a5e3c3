"""LangChain's JS client with its default protocol paths (`/threads/:id/commands`, `/threads/:id/stream/events`,
`/threads/:id/runs/:run_id/cancel`): against the service with apiUrl `{base}/api`, and at the root of a revision's
serving process, which is the Agent Server API's base (`{custom_url}`)."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from agentruntime.models import ChatThread
from tests.chat.support_chat import live_chat_server
from tests.chat.test_clients import JS_DIR, ai_text, assert_stopped, js_client_missing
from tests.support_processes import graphs_served

pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
chat_server = live_chat_server(CHAT_AGENT_DELAY_SCALE="0.5")
SERVING_ENV = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
               "CHAT_MODEL": "", "CHAT_AGENT_DELAY_SCALE": "0.5", "CHAT_STORE_POLL_SECONDS": "0.1",
               "CHAT_TRACING_PROJECT": ""}


def run_js_client_with_default_paths(api_url: str) -> dict:
    missing = js_client_missing()
    if missing:
        pytest.skip(f"JS client tests need Node and tests/js packages: {missing}")
    finished = subprocess.run(["node", "chat_client.mjs"], cwd=JS_DIR, capture_output=True, text=True, timeout=180,
                              env={**os.environ, "CHAT_API_URL": api_url, "CHAT_DEFAULT_PATHS": "1"})
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    assert finished.returncode == 0 and "failure" not in report, report.get("failure") or finished.stderr
    return report


def assert_whole_conversation(report: dict) -> None:
    assert report["bootstrap"] == "created"
    assert sorted(s["name"] for s in report["turn1"]["subagents"]) == ["math-whiz", "researcher"]
    assert "7 * 6 = 42" in ai_text(report["turn2"]["messages"][-1])
    assert_stopped(report["stop"])
    assert sorted(s["name"] for s in report["reload"]["subagents"]) == ["math-whiz", "math-whiz", "researcher"]
    assert ChatThread.objects.filter(pk=report["thread_id"]).exists()


@pytest.fixture
def serving_process(transactional_db, tmp_path):
    """`serve_graphs` as a deployed revision runs it, serving the chat's deep agent (offline scripted model)."""
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"agent": "chat.agent.graph:build_graph"}}))
    with graphs_served(config, env=SERVING_ENV, log_path=tmp_path / "serving.log") as url:
        yield url


def test_with_api_url_base_api_the_default_paths_hold_a_whole_conversation(chat_server, transactional_db):
    assert_whole_conversation(run_js_client_with_default_paths(f"{chat_server.url}/api"))


def test_at_the_root_of_a_serving_process_the_default_paths_hold_a_whole_conversation(serving_process):
    assert_whole_conversation(run_js_client_with_default_paths(serving_process))


def test_at_the_root_the_agent_servers_own_thread_paths_still_reach_django(serving_process):
    thread_id = httpx.post(f"{serving_process}/threads", json={}, trust_env=False).json()["thread_id"]

    # Not taken for a malformed thread id "<id>/runs" by the protocol's stream route: the Agent Server answers.
    response = httpx.post(f"{serving_process}/threads/{thread_id}/runs/stream", json={}, trust_env=False)
    assert response.headers["content-type"].startswith("application/json") and "detail" in response.json()
    # The examples' thread list and stream path stay under /api: at the root, /threads/{id}/stream is the Agent
    # Server's join of the thread's stream, a GET.
    assert httpx.post(f"{serving_process}/threads/{thread_id}/stream", json={"channels": ["values"]},
                      trust_env=False).status_code == 405
    assert httpx.get(f"{serving_process}/api/threads", trust_env=False).status_code == 200

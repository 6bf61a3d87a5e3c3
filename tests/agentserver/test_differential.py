"""One scripted scenario of assistant and thread operations against LangChain's own Agent Server (`langgraph dev`
0.16.7, installed by scripts/test-deps.d/40-langgraph-dev.sh) and against ours (`serve_graphs`, as a deployed
revision runs it), compared response by response once ids, timestamps and error messages are normalised."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess

import httpx
import pytest

from tests.agentserver.sdk_support import PROJECT
from tests.support import BASE_DIR, ChildProcess, free_port, wait_for_http

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]
PEER = BASE_DIR / "data" / "langgraph-peer" / "venv" / "bin" / "langgraph"
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}
THREAD, OTHER, ASSISTANT = ("7d1f7c2e-0000-4000-8000-000000000001", "7d1f7c2e-0000-4000-8000-000000000002",
                            "7d1f7c2e-0000-4000-8000-000000000003")
NESTED = "0813419b-f0e6-579e-bdee-18d9fdf48632"  # uuid5 of "nested": the same on both servers
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# Checkpoint metadata describing the Agent Server's own deployment and request, not the thread, and `thread_id`,
# which LangGraph's checkpointers leave out (EXCLUDED_METADATA_KEYS) and only the in-memory runtime keeps.
PEER_ONLY_METADATA = {"thread_id", "assistant_id", "user_id", "created_by", "run_attempt", "langgraph_version",
                      "langgraph_api_version", "langgraph_plan", "langgraph_host", "langgraph_api_url",
                      "langgraph_auth_user_id", "langgraph_request_id", "run_id"}

SCENARIO = [
    ("POST", "/assistants/search", {"sort_by": "graph_id", "sort_order": "asc"}),
    ("POST", "/assistants/count", {}),
    ("GET", f"/assistants/{NESTED}", None),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT, "name": "helper",
                             "metadata": {"team": "a"}, "context": {"model": "m"}, "description": "first"}),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT}),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT, "if_exists": "do_nothing"}),
    ("POST", "/assistants", {"graph_id": "no-such-graph"}),
    ("PATCH", f"/assistants/{ASSISTANT}", {"metadata": {"stage": "two"}, "name": "helper 2"}),
    ("POST", f"/assistants/{ASSISTANT}/versions", {}),
    ("POST", f"/assistants/{ASSISTANT}/latest", {"version": 1}),
    ("POST", f"/assistants/{ASSISTANT}/latest", {"version": 9}),
    ("POST", "/assistants/search", {"metadata": {"team": "a"}, "select": ["assistant_id", "name", "version"]}),
    ("POST", "/assistants/search", {"name": "nest"}),
    ("POST", "/assistants/count", {"graph_id": "echo"}),
    ("GET", f"/assistants/{NESTED}/graph", None),
    ("GET", f"/assistants/{NESTED}/graph?xray=true", None),
    ("GET", f"/assistants/{NESTED}/schemas", None),
    ("GET", f"/assistants/{NESTED}/subgraphs", None),
    ("GET", f"/assistants/{NESTED}/subgraphs/child", None),
    ("DELETE", f"/assistants/{ASSISTANT}", None),
    ("DELETE", f"/assistants/{ASSISTANT}", None),
    ("POST", "/threads", {"thread_id": THREAD, "metadata": {"graph_id": "nested", "team": "a"}}),
    ("POST", "/threads", {"thread_id": THREAD}),
    ("POST", "/threads", {"thread_id": THREAD, "if_exists": "do_nothing"}),
    ("POST", "/threads", {"thread_id": "not-a-uuid"}),
    ("GET", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}/state", None),
    ("POST", f"/threads/{THREAD}/history", {}),
    ("PATCH", f"/threads/{THREAD}", {"metadata": {"stage": "two"}}),
    ("POST", f"/threads/{THREAD}/state", {"values": {"steps": ["a"]}, "as_node": "outer_step"}),
    ("POST", f"/threads/{THREAD}/state", {"values": {"steps": ["b"]}, "as_node": "nope"}),
    ("GET", f"/threads/{THREAD}/state", None),
    ("POST", f"/threads/{THREAD}/history", {"limit": 5}),
    ("GET", f"/threads/{THREAD}", None),
    ("POST", "/threads/search", {"metadata": {"team": "a"}}),
    ("POST", "/threads/search", {"ids": [THREAD], "select": ["thread_id", "status"]}),
    ("POST", "/threads/search", {"status": "bogus"}),
    ("POST", "/threads/count", {"metadata": {"team": "a"}}),
    ("GET", f"/threads/{OTHER}", None),
    ("DELETE", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}/state", None),
]


class Normaliser:
    """Ids become <id-N> in order of first appearance, timestamps <ts>, error messages <detail>."""

    def __init__(self):
        self.ids: dict[str, str] = {}

    def __call__(self, value, key: str | None = None):
        if isinstance(value, dict) and "next" in value and isinstance(value.get("metadata"), dict):  # a ThreadState
            metadata = {k: v for k, v in value["metadata"].items() if k not in PEER_ONLY_METADATA}
            return {k: self(metadata if k == "metadata" else v, k) for k, v in value.items()}
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str) and (UUID.match(value) or key in ("checkpoint_ns",) and ":" in value):
            return self.ids.setdefault(value, f"<id-{len(self.ids)}>")
        if isinstance(value, str) and TIMESTAMP.match(value):
            return "<ts>"
        return value


def play(base: str) -> list[tuple]:
    normalise, seen = Normaliser(), []
    with httpx.Client(base_url=base, timeout=30, trust_env=False) as client:
        for method, path, body in SCENARIO:
            response = client.request(method, path, json=body)
            payload = response.json() if response.content else None
            if response.status_code >= 400:
                assert isinstance(payload, dict) and isinstance(payload.get("detail"), str), (path, payload)
                payload = {"detail": "<detail>"}
            seen.append((method, path, response.status_code, normalise(payload)))
    return seen


@pytest.fixture
def peer(tmp_path):
    if not PEER.exists():
        pytest.skip("langgraph dev is not installed: run scripts/test-deps.d/40-langgraph-dev.sh")
    project = shutil.copytree(BASE_DIR / PROJECT, tmp_path / "peer-project")
    port = free_port()
    log = open(tmp_path / "peer.log", "wb")
    process = subprocess.Popen([str(PEER), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port",
                                str(port)], cwd=project, env={**os.environ, **OFFLINE}, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=process, timeout=90,
                      describe=lambda: (tmp_path / "peer.log").read_text(errors="replace")[-3000:])
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


@pytest.fixture
def ours(transactional_db, tmp_path):
    port = free_port()
    served = ChildProcess("serve_graphs", "--config", str(BASE_DIR / PROJECT / "langgraph.json"), "--port",
                          str(port), env={"DJANGO_SETTINGS_MODULE": "deployments.serving_settings",
                                          "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_TRACING_PROJECT": ""},
                          log_path=tmp_path / "ours.log").start()
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=served.process, timeout=60, describe=served.output)
        yield f"http://127.0.0.1:{port}"
    finally:
        served.stop()


def test_assistants_and_threads_answer_like_langgraph_dev(peer, ours):
    theirs, mine = play(peer), play(ours)
    for expected, found in zip(theirs, mine, strict=True):
        assert found == expected

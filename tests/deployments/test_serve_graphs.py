"""A project with several graphs: the build checks every one, and `serve_graphs` serves every one, `run.start`'s
`assistant_id` picking a graph by its langgraph.json key ("_" or an unknown id: the first)."""

from __future__ import annotations

import io
import json
import sys
import uuid

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agentruntime.store import config as store_config
from tests.deployments.support_projects import make_project
from tests.support_processes import ChildProcess, free_port, wait_for, wait_for_http

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]

# One graph per entry kind: `./path.py:attr` and `package.module:attr`.
ANSWERING = '''
from typing import TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict, total=False):
    messages: list
    answered_by: str


def answering(name):
    builder = StateGraph(State)
    builder.add_node("answer", lambda state: {"answered_by": name})
    builder.add_edge(START, "answer")
    return builder.compile(name=name)
'''
CONFIG = {"dependencies": ["."], "graphs": {"first": "./graph.py:graph", "second": "two_graph_agents.second:graph"}}


@pytest.fixture
def two_graph_project(tmp_path, monkeypatch):
    root = make_project(tmp_path / "project", graph=ANSWERING + 'graph = answering("first")\n', config=CONFIG,
                        files={"two_graph_agents/__init__.py": "", "two_graph_agents/answering.py": ANSWERING,
                               "two_graph_agents/second.py": 'from two_graph_agents.answering import answering\n\n'
                                                             'graph = answering("second")\n'})
    # The revision's environment puts the project's folder on the path (a .pth file); here PYTHONPATH does.
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] == "two_graph_agents"]:
        del sys.modules[name]


def test_the_build_check_loads_and_compiles_every_graph(two_graph_project):
    out = io.StringIO()
    call_command("check_graphs", config=str(two_graph_project / "langgraph.json"), stdout=out)
    assert "graph 'first': OK" in out.getvalue() and "graph 'second': OK" in out.getvalue()


def test_the_build_check_fails_on_a_store_embedding_function_that_cannot_load(two_graph_project):
    config = json.loads((two_graph_project / "langgraph.json").read_text())
    config["store"] = {"index": {"embed": "./embed.py:embed_texts", "dims": 8}}
    (two_graph_project / "langgraph.json").write_text(json.dumps(config))

    with pytest.raises(CommandError, match=r"store.index.embed './embed.py:embed_texts': .*no file"):
        call_command("check_graphs", config=str(two_graph_project / "langgraph.json"), stdout=io.StringIO())
    store_config.configure(None, base_dir=two_graph_project)


def test_serve_graphs_serves_every_graph_by_its_assistant_id(two_graph_project, tmp_path):
    port = free_port()
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "SQLITE_PATH": str(tmp_path / "serve.sqlite3"),
           "DATA_DIR": str(tmp_path), "DATABASE_URL": "", "REDIS_URL": "", "CHAT_ALLOW_ANONYMOUS": "true",
           "CHAT_TRACING_PROJECT": "", "PYTHONPATH": str(two_graph_project)}
    server = ChildProcess("serve_graphs", "--config", str(two_graph_project / "langgraph.json"), "--port", str(port),
                          env=env, log_path=tmp_path / "serve.log").start()
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=server.process, describe=server.output, timeout=60)
        assert "Serving graph 'first'" in server.output() and "Serving graph 'second'" in server.output()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api", timeout=30, trust_env=False) as client:
            for assistant_id, graph in (("second", "second"), ("first", "first"), ("_", "first"),
                                        ("not-a-graph", "first")):
                assert answered_by(client, assistant_id) == graph, (assistant_id, server.output())
    finally:
        server.stop()


def test_a_serving_process_refuses_requests_without_its_token_and_answers_unknown_paths_404(two_graph_project,
                                                                                           tmp_path):
    port = free_port()
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "SQLITE_PATH": str(tmp_path / "serve.sqlite3"),
           "DATA_DIR": str(tmp_path), "DATABASE_URL": "", "REDIS_URL": "", "CHAT_TRACING_PROJECT": "",
           "PYTHONPATH": str(two_graph_project), "SERVE_GRAPHS_TOKEN": "proxy-token"}
    server = ChildProcess("serve_graphs", "--config", str(two_graph_project / "langgraph.json"), "--port", str(port),
                          env=env, log_path=tmp_path / "serve.log").start()
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=server.process, describe=server.output, timeout=60)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False) as client:
            refused = client.get("/api/info")
            assert refused.status_code == 403
            assert refused.content == (b'{"error": "permission_denied", "message": "Requests must come through the '
                                       b'deployment\'s URL."}')
            unknown = client.get("/no/such/path", headers={"X-Serving-Token": "proxy-token"})
            assert unknown.status_code == 404 and unknown.content == b'{"detail": "Not Found"}'
    finally:
        server.stop()


def answered_by(client: httpx.Client, assistant_id: str) -> str:
    thread = str(uuid.uuid4())
    started = client.post(f"/threads/{thread}/commands", json={"id": 1, "method": "run.start", "params": {
        "assistant_id": assistant_id, "input": {"messages": []}}}).json()
    assert started["type"] == "success", started

    def answered():
        response = client.get(f"/threads/{thread}/state")
        return response.status_code == 200 and response.json()["values"].get("answered_by")

    return wait_for(answered, timeout=30, interval=0.1)

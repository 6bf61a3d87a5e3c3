"""The official langsmith SDK, pointed at a live server, stores its traces here, over the route it prefers."""

from __future__ import annotations

import re
import time

import pytest
from langsmith import Client, traceable, tracing_context
from langsmith import utils as ls_utils

from accounts.services import api_key_create, workspace_create
from tracing.models import Run

pytestmark = pytest.mark.live


@traceable(name="fetch", run_type="tool")
def fetch(query: str) -> dict:
    return {"docs": [query]}


@traceable(name="explode", run_type="tool")
def explode(query: str) -> None:
    raise ValueError("the tool broke")


@traceable(name="llm_call", run_type="llm")
def llm_call(prompt: str) -> dict:
    return {"content": f"answer to {prompt}",
            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}


@traceable(name="plan", run_type="chain")
def plan(query: str) -> dict:
    fetch(query)
    return llm_call(query)


@traceable(name="agent", run_type="chain")
def agent(query: str) -> str:
    plan(query)
    try:
        explode(query)
    except ValueError:
        pass
    return "done"


@pytest.fixture
def credentials(transactional_db):
    workspace = workspace_create(name="sdk-workspace")
    _, raw_key = api_key_create(workspaces=[workspace], permissions=["tracing:write"])
    return workspace, raw_key


def make_client(url: str, key: str, **kwargs) -> Client:
    return Client(api_url=url, api_key=key, omit_traced_runtime_info=True, **kwargs)


def trace_agent(client: Client, project: str) -> None:
    try:
        with tracing_context(enabled=True, client=client, project_name=project):
            agent("hello")
        client.flush()
    finally:
        client.cleanup(timeout=0)


def wait_for_compression(client: Client) -> None:
    # The SDK decides on zstd in its background thread, after it read /info.
    deadline = time.monotonic() + 10
    while client.compressed_traces is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.compressed_traces is not None, "the SDK did not switch to zstd multipart after reading /info"


def assert_agent_tree(workspace, project: str) -> None:
    runs = {run.name: run for run in Run.objects.filter(workspace=workspace, session__name=project)}
    assert set(runs) == {"agent", "plan", "fetch", "llm_call", "explode"}
    root = runs["agent"]
    assert root.is_root and root.parent_run_id is None and root.trace_id == root.id
    assert re.fullmatch(r"\d{8}T\d{12}Z" + str(root.id), root.dotted_order)
    parents = {"plan": "agent", "explode": "agent", "fetch": "plan", "llm_call": "plan"}
    for name, parent_name in parents.items():
        run, parent = runs[name], runs[parent_name]
        assert run.trace_id == root.id and run.parent_run_id == parent.id and not run.is_root
        assert run.dotted_order.startswith(parent.dotted_order + ".") and run.dotted_order.endswith(str(run.id))
        assert run.parent_run_ids == [str(ancestor) for ancestor in
                                      ([root.id] if parent_name == "agent" else [root.id, parent.id])]
    assert {name: run.status for name, run in runs.items()} == {
        "agent": "success", "plan": "success", "fetch": "success", "llm_call": "success", "explode": "error"}
    assert "the tool broke" in runs["explode"].error
    assert runs["agent"].outputs == {"output": "done"} and runs["fetch"].inputs == {"query": "hello"}
    llm = runs["llm_call"]
    assert (llm.prompt_tokens, llm.completion_tokens, llm.total_tokens) == (3, 2, 5)


@pytest.mark.parametrize("base_path", ["", "/api/v1"])
def test_the_sdk_sends_zstd_multipart_and_the_tree_is_stored(ingest_server, credentials, base_path):
    workspace, key = credentials
    client = make_client(ingest_server.url + base_path, key)
    wait_for_compression(client)
    trace_agent(client, "sdk-project")
    assert_agent_tree(workspace, "sdk-project")
    requests = ingest_server.ingest_requests()
    assert requests and {(r["route"], r["encoding"]) for r in requests} == {(f"{base_path}/runs/multipart", "zstd")}
    assert sum(r["runs"] for r in requests) >= 5


def test_with_compression_off_the_sdk_sends_plain_multipart(ingest_server, credentials, monkeypatch):
    workspace, key = credentials
    monkeypatch.setenv("LANGSMITH_DISABLE_RUN_COMPRESSION", "true")
    ls_utils.get_env_var.cache_clear()
    try:
        trace_agent(make_client(ingest_server.url, key), "plain-project")
    finally:
        monkeypatch.delenv("LANGSMITH_DISABLE_RUN_COMPRESSION")
        ls_utils.get_env_var.cache_clear()
    assert_agent_tree(workspace, "plain-project")
    assert {(r["route"], r["encoding"]) for r in ingest_server.ingest_requests()} == {("/runs/multipart", "identity")}


def test_without_multipart_the_sdk_uses_runs_batch(ingest_server, credentials):
    workspace, key = credentials
    info = {"version": "0.1.0", "batch_ingest_config": {
        "use_multipart_endpoint": False, "size_limit_bytes": 20 * 1024 * 1024, "size_limit": 100,
        "scale_up_qsize_trigger": 1000, "scale_up_nthreads_limit": 16, "scale_down_nempty_trigger": 4}}
    trace_agent(make_client(ingest_server.url, key, info=info), "batch-project")
    assert_agent_tree(workspace, "batch-project")
    assert {r["route"] for r in ingest_server.ingest_requests()} == {"/runs/batch"}


def test_without_background_batching_the_sdk_posts_and_patches_single_runs(ingest_server, credentials):
    workspace, key = credentials
    trace_agent(make_client(ingest_server.url, key, auto_batch_tracing=False), "single-project")
    assert_agent_tree(workspace, "single-project")
    routes = [r["route"] for r in ingest_server.ingest_requests()]
    assert routes.count("/runs") == 5
    assert len([route for route in routes if re.fullmatch(r"/runs/[0-9a-f-]{36}", route)]) == 5

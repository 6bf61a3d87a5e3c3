"""The official Python `langgraph_sdk` and `RemoteGraph` against a revision the local runner built and serves: the
Agent Server API (assistants, threads, runs, store, crons) at the root of the deployment's stable URL, on the same
threads as the examples' protocol under /api."""

from __future__ import annotations

import uuid

import pytest

from accounts.services import api_key_create, workspace_create
from tests.agentserver import support_cron_scenarios as cron_scenarios
from tests.agentserver import support_scenarios as scenarios
from tests.agentserver.support_sdk import CLIENT_KINDS, SdkClient, status_of
from tests.deployments.support_projects import deploy_test_project
from tests.deployments.test_live import Api
from tests.support_processes import wait_for

pytestmark = pytest.mark.live


def test_a_deployed_revision_answers_the_sdk_on_every_assistant_thread_run_store_and_cron_operation(
        stack_factory, workspace, tmp_path):
    owner = api_key_create(workspaces=[workspace])[1]
    stack = stack_factory()
    api = Api(stack.url, owner)
    custom_url = deploy_test_project(api, tmp_path, name="agent-server")

    for kind in CLIENT_KINDS:
        client = SdkClient(kind, custom_url, api_key=owner)
        try:
            scenarios.system_assistants(client, ["nested", "echo", "asker", "slow", "chat"])
            scenarios.assistant_lifecycle(client, "echo")
            scenarios.assistant_graph(client, "nested")
            scenarios.thread_lifecycle(client)
            scenarios.runs_lifecycle(client, custom_url, owner)
            scenarios.bad_input(client, custom_url, {"X-Api-Key": owner})
            scenarios.store_lifecycle(client)
            cron_scenarios.cron_lifecycle(client, "echo", custom_url, {"X-Api-Key": owner})
        finally:
            client.close()

    client = SdkClient("sync", custom_url, api_key=owner)
    try:
        # The revision's serving process fires crons (its periodic jobs): each tick a run on the cron's thread.
        assert {run["status"] for run in cron_scenarios.cron_fires_on_its_thread(client, "echo", "tick")} <= {
            "pending", "running", "success"}
        _protocol_and_sdk_share_threads(client, custom_url, owner)
        _another_workspace_is_404(custom_url, client.threads.create()["thread_id"])
    finally:
        client.close()


def _protocol_and_sdk_share_threads(client: SdkClient, custom_url: str, key: str) -> None:
    import httpx

    thread_id = client.threads.create(metadata={"via": "sdk"})["thread_id"]
    command = {"id": 1, "method": "run.start", "params": {"assistant_id": "echo",
                                                          "input": {"messages": [{"content": "hello"}]}}}
    with httpx.Client(base_url=f"{custom_url}/api", headers={"X-Api-Key": key}, timeout=30,
                      trust_env=False) as http:
        assert http.post(f"/threads/{thread_id}/commands", json=command).json()["type"] == "success"
        # The examples' state route is the same handler as the SDK's.
        done = wait_for(lambda: (s := http.get(f"/threads/{thread_id}/state").json())["values"].get("echo") and s,
                        timeout=60)
    assert done["values"]["echo"] == "hello"
    assert client.threads.get_state(thread_id)["values"] == done["values"]
    assert wait_for(lambda: client.threads.get(thread_id)["status"] == "idle", timeout=30)


def _another_workspace_is_404(custom_url: str, thread_id: str) -> None:
    other = api_key_create(workspaces=[workspace_create(name=f"other-{uuid.uuid4().hex[:6]}")])[1]
    stranger = SdkClient("sync", custom_url, api_key=other)
    try:
        assert status_of(lambda: stranger.threads.get(thread_id))[0] == 404
        assert status_of(lambda: stranger.assistants.search())[0] == 404
    finally:
        stranger.close()

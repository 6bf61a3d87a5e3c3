"""Replicas and resources against a live server and worker: a prod deployment served by two processes that share its
threads and runs, a replica killed without a failed call and brought back alone by the reconciler, and the memory
limit of resource_spec read back from each process."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import pytest
from django.utils import timezone
from langgraph_sdk import get_client, get_sync_client

from accounts.services import api_key_create
from core.models import PeriodicLease
from core.process_identity import pid_alive
from deployments.models import Revision
from deployments.runners import limits
from tests.agentserver.support_sdk import PROJECT
from tests.deployments.support_projects import tarball
from tests.deployments.test_live import Api
from tests.support_processes import BASE_DIR, wait_for

pytestmark = pytest.mark.live
SPEC = {"memory_mb": 512, "cpu": 0.5, "labels": {"team": "agents"}}
LIMIT = 1024 * 1024 * 1024  # twice memory_mb, LangSmith's default limit


def test_a_prod_deployment_serves_from_two_processes_and_a_killed_replica_costs_no_failed_call(
        stack_factory, workspace, tmp_path):
    owner = api_key_create(workspaces=[workspace])[1]
    # The reconciler runs when the test says so (below), not while a replica is meant to stay dead.
    stack = stack_factory(DEPLOY_RECONCILE_SECONDS="3600")
    api = Api(stack.url, owner)
    deployment_id, custom_url = deploy(api, tmp_path, {"deployment_type": "prod", "resource_spec": SPEC})
    revision = Revision.objects.get(id=api.call("GET", f"/v2/deployments/{deployment_id}")["active_revision_id"])
    first, second = revision.serving_replicas
    assert first["port"] != second["port"] and all(pid_alive(pid) for pid in revision.serving_pids)
    assert [memory_limit(pid) for pid in revision.serving_pids] == [LIMIT, LIMIT]
    deploy_log = api.logs(deployment_id, str(revision.id), "deploy")
    assert ("Resources: 2 serving processes (the default for a prod deployment), a memory limit of 1024 MiB on each "
            "(twice memory_mb, LangSmith's default limit).") in deploy_log
    assert deploy_log.count("memory limited to 1024 MiB by ") == 2
    assert "resource_spec.cpu (0.5) is not applied: the local runner does not limit or reserve CPU." in deploy_log
    assert 'resource_spec.labels ({"team": "agents"}) is not applied' in deploy_log
    assert "Health check passed: GET /ok answered on all 2 replicas." in deploy_log

    # Each replica, called directly: a thread made on one is the other's, and a run started on one streams, whole
    # and in order, from both (one of them is not the process executing it).
    one, two = (replica_client(revision, replica) for replica in (first, second))
    thread_id = one.threads.create(metadata={"made_on": "one"})["thread_id"]
    assert two.threads.get(thread_id)["metadata"]["made_on"] == "one"
    run = two.runs.create(thread_id, "slow", input={"steps": 5, "delay": 0.2}, stream_mode=["custom"],
                          stream_resumable=True)
    ticks_one, ticks_two = asyncio.run(joined_from_both(revision, thread_id, run["run_id"]))
    assert ticks_one == ticks_two == [1, 2, 3, 4, 5]
    assert one.threads.get_state(thread_id)["values"]["ticks"] == [1, 2, 3, 4, 5]

    # SIGKILL the second replica: every call through the deployment's URL still succeeds.
    os.kill(second["pid"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(second["pid"]), timeout=15)
    proxied = get_sync_client(url=custom_url, api_key=owner)
    for step in range(6):
        thread = proxied.threads.create()
        assert proxied.runs.wait(thread["thread_id"], "slow", input={"steps": 1, "delay": 0})["ticks"] == [1]
        assert proxied.threads.get(thread_id)["thread_id"] == thread_id, step
    assert "did not accept the connection" in stack.server.output()

    # The reconciler starts that replica again, alone: the first keeps its process.
    PeriodicLease.objects.filter(name="deployments.reconcile").update(next_run_at=timezone.now())
    restarted = wait_for(lambda: restarted_replica(revision, second["pid"]), timeout=120, describe=stack.logs)
    assert Revision.objects.get(id=revision.id).serving_replicas[0] == first and pid_alive(first["pid"])
    assert memory_limit(restarted["pid"]) == LIMIT
    replica_client(revision, restarted).threads.get(thread_id)
    # A new run continues the thread (one more tick) through the replicas, the restarted one among them.
    assert proxied.runs.wait(thread_id, "slow", input={"steps": 1, "delay": 0})["ticks"] == [1, 2, 3, 4, 5, 6]
    deploy_log = api.logs(deployment_id, str(revision.id), "deploy")
    assert "Replica 2 of the active revision is not being served; starting it again." in deploy_log
    assert "Replica 2 answers its health check again." in deploy_log


def deploy(api: Api, tmp_path: Path, source_config: dict) -> tuple[str, str]:
    """Deploy the Agent Server test project with `source_config`; its id and URL once DEPLOYED."""
    project = shutil.copytree(BASE_DIR / PROJECT, tmp_path / "project")
    deployment = api.create({"name": "replicated", "source": "internal_source", "source_config": source_config,
                             "source_revision_config": {}})
    object_path = api.upload(deployment["id"], tarball(project))
    revision_id = api.call("PATCH", f"/v2/deployments/{deployment['id']}", json={
        "source_revision_config": {"source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"},
    })["latest_revision_id"]
    api.wait_status(deployment["id"], revision_id, "DEPLOYED")
    return deployment["id"], api.call("GET", f"/v2/deployments/{deployment['id']}")["source_config"]["custom_url"]


def replica_client(revision: Revision, replica: dict):
    """The SDK on one replica's own port, with the token the proxy would add."""
    return get_sync_client(url=f"http://127.0.0.1:{replica['port']}", api_key=None,
                           headers={"X-Serving-Token": revision.serving_token})


async def joined_from_both(revision: Revision, thread_id: str, run_id: str) -> list[list[int]]:
    """The run's custom events ("tick" n) as a stream joined on each replica reads them, at the same time."""
    async def ticks(replica: dict) -> list[int]:
        client = get_client(url=f"http://127.0.0.1:{replica['port']}", api_key=None,
                            headers={"X-Serving-Token": revision.serving_token})
        try:
            return [part.data["tick"] async for part in client.runs.join_stream(thread_id, run_id)
                    if part.event == "custom"]
        finally:
            await client.aclose()

    return list(await asyncio.gather(*(ticks(replica) for replica in revision.serving_replicas)))


def restarted_replica(revision: Revision, killed_pid: int) -> dict | None:
    """The second replica once it was started again and answers, else None."""
    replica = Revision.objects.get(id=revision.id).serving_replicas[1]
    if replica["pid"] == killed_pid or not pid_alive(replica["pid"]):
        return None
    try:
        replica_client(revision, replica).threads.search(limit=1)
    except Exception:
        return None
    return replica


def memory_limit(pid: int) -> int | None:
    """The memory limit the kernel holds for `pid`: its memory cgroup's (v1 or v2), else its RLIMIT_DATA."""
    for cgroup in limits.process_cgroups(pid):
        for name in ("memory.limit_in_bytes", "memory.max"):
            value = (cgroup / name).read_text().strip() if (cgroup / name).is_file() else ""
            if value.isdigit() and int(value) < 2**60:
                return int(value)
    return limits.rlimit_data(pid)

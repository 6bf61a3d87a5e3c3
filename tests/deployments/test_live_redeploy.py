"""Deployments keep their data: every revision serves from the deployment's one database, so a redeploy loses
nothing, callers busy during it see no failure, a killed process's run is taken over, and deleting the deployment
removes its data. All through the official `langgraph_sdk` at the deployment's stable URL."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import uuid

import httpx
import pytest

from accounts.services import api_key_create
from deployments import databases
from deployments.models import Deployment, Revision
from tests.agentserver.support_sdk import PROJECT, SdkClient
from tests.deployments.support_projects import deploy_project, tarball
from tests.deployments.test_live import Api
from tests.support_processes import BASE_DIR, wait_for

pytestmark = pytest.mark.live


@pytest.fixture
def owner(workspace):
    return api_key_create(workspaces=[workspace])[1]


def copy_project(tmp_path):
    return shutil.copytree(BASE_DIR / PROJECT, tmp_path / f"project-{uuid.uuid4().hex[:6]}")


def redeploy(api: Api, deployment_id: str, project, *, change: str) -> str:
    """A one-line change to the project, uploaded and PATCHed: the new revision's id once it is DEPLOYED."""
    with open(project / "graphs.py", "a") as graphs:
        graphs.write(f"\n# {change}\n")
    object_path = api.upload(deployment_id, tarball(project))
    revision_id = api.call("PATCH", f"/v2/deployments/{deployment_id}", json={
        "source_revision_config": {"source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"},
    })["latest_revision_id"]
    api.wait_status(deployment_id, revision_id, "DEPLOYED")
    return revision_id


def deployment_of(custom_url: str) -> Deployment:
    return Deployment.objects.get(id=custom_url.rstrip("/").rsplit("/", 1)[-1])


def snapshot(client: SdkClient, *, assistant_id: str, thread_id: str) -> dict:
    """What a user would check after a redeploy, by the SDK's reads."""
    return {
        "assistant": client.assistants.get(assistant_id),
        "versions": [v["version"] for v in client.assistants.get_versions(assistant_id)],
        "thread": client.threads.get(thread_id),
        "state": client.threads.get_state(thread_id)["values"],
        "history": [h["checkpoint"]["checkpoint_id"] for h in client.threads.get_history(thread_id)],
        "runs": sorted((r["run_id"], r["status"]) for r in client.runs.list(thread_id)),
        "item": client.store.get_item(["durable", "notes"], "first")["value"],
        "crons": sorted(c["cron_id"] for c in client.crons.search(assistant_id="echo")),
    }


class BusyCallers:
    """Callers calling `runs.wait` and `runs.stream` in a loop (each on a thread of its own) until stopped."""

    def __init__(self, url: str, key: str, *, waiters: int = 2, streamers: int = 1):
        self.url, self.key = url, key
        self.calls = 0
        self.failures: list[str] = []
        self.thread_ids: list[str] = []
        self.stop = threading.Event()
        self.workers = [threading.Thread(target=self._wait_loop, daemon=True) for _ in range(waiters)]
        self.workers += [threading.Thread(target=self._stream_loop, daemon=True) for _ in range(streamers)]

    def __enter__(self):
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout=120)

    def _call(self, call) -> None:
        try:
            call()
        except Exception as exc:  # every failure counts, whatever its kind
            self.failures.append(f"{type(exc).__name__}: {exc}")
        self.calls += 1

    def _wait_loop(self) -> None:
        client = SdkClient("sync", self.url, api_key=self.key)
        thread_id = client.threads.create()["thread_id"]
        self.thread_ids.append(thread_id)
        n = 0
        while not self.stop.is_set():
            n += 1
            word = f"wait-{n}"

            def call(word=word):
                result = client.runs.wait(thread_id, "echo", input={"messages": [{"content": word}]})
                assert result["echo"] == word, result
            self._call(call)
        client.close()

    def _stream_loop(self) -> None:
        client = SdkClient("sync", self.url, api_key=self.key)
        n = 0
        while not self.stop.is_set():
            n += 1
            word = f"stream-{n}"

            def call(word=word):
                parts = list(client.runs.stream(None, "echo", input={"messages": [{"content": word}]},
                                                stream_mode="values"))
                values = [p.data for p in parts if p.event == "values"]
                assert values and values[-1]["echo"] == word, parts
            self._call(call)
        client.close()


def test_everything_a_revision_holds_survives_a_redeploy_made_while_callers_are_busy(stack_factory, owner, tmp_path):
    stack = stack_factory()
    api = Api(stack.url, owner)
    project = copy_project(tmp_path)
    custom_url = deploy_project(api, project, name="durable")
    deployment = deployment_of(custom_url)
    client = SdkClient("sync", custom_url, api_key=owner)

    assistant = client.assistants.create(graph_id="echo", name="kept", metadata={"v": 1})
    client.assistants.update(assistant["assistant_id"], metadata={"v": 2})
    thread_id = client.threads.create(metadata={"owner": "alice"})["thread_id"]
    for word in ("one", "two"):
        client.runs.wait(thread_id, assistant["assistant_id"], input={"messages": [{"content": word}]})
    client.store.put_item(["durable", "notes"], "first", {"text": "kept"})
    client.crons.create_for_thread(thread_id, "echo", schedule="0 0 1 1 *", input={"messages": []})
    before = snapshot(client, assistant_id=assistant["assistant_id"], thread_id=thread_id)
    assert before["versions"] == [2, 1] and len(before["runs"]) == 2

    with BusyCallers(custom_url, owner) as callers:
        wait_for(lambda: callers.calls >= 3, timeout=60)
        new_revision = redeploy(api, str(deployment.id), project, change="a one-line fix")
        calls_at_switch = callers.calls
        wait_for(lambda: callers.calls >= calls_at_switch + 3, timeout=60)
    assert callers.failures == [], callers.failures[:5]
    assert callers.calls >= 6

    assert Deployment.objects.get(id=deployment.id).active_revision_id == uuid.UUID(new_revision)
    assert snapshot(client, assistant_id=assistant["assistant_id"], thread_id=thread_id) == before
    # A new run continues the old thread: its messages hold the runs of the old revision.
    after = client.runs.wait(thread_id, assistant["assistant_id"], input={"messages": [{"content": "three"}]})
    assert [m["content"] for m in after["messages"]] == ["one", "two", "three"]
    # No run of the busy callers was left pending or running by the handover.
    for busy_thread in callers.thread_ids:
        statuses = {r["status"] for r in client.runs.list(busy_thread, limit=1000)}
        assert statuses == {"success"}, statuses
    client.close()


def test_a_run_whose_process_is_killed_is_taken_over_and_its_thread_takes_new_runs(stack_factory, owner, tmp_path):
    stack = stack_factory(CHAT_RUN_STALE_SECONDS="6", CHAT_SWEEP_SECONDS="2")
    api = Api(stack.url, owner)
    custom_url = deploy_project(api, copy_project(tmp_path), name="killed")
    deployment = deployment_of(custom_url)
    client = SdkClient("sync", custom_url, api_key=owner)
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "slow", input={"steps": 40, "delay": 0.25})
    wait_for(lambda: client.runs.get(thread_id, run["run_id"])["status"] == "running", timeout=30)

    revision = Revision.objects.get(id=deployment.active_revision_id)
    os.killpg(revision.serving_pid, signal.SIGKILL)
    # The reconciler starts the revision again; the run is retried (it checkpointed, so it ends in error with the
    # reason) within its lease, never left running.
    ended = wait_for(lambda: (status := run_status(client, thread_id, run["run_id"])) in ("success", "error")
                     and status, timeout=120)
    assert ended in ("success", "error")
    after = client.runs.wait(thread_id, "echo", input={"messages": [{"content": "still here"}]})
    assert after["echo"] == "still here"
    client.close()


def run_status(client: SdkClient, thread_id: str, run_id: str) -> str | None:
    """The run's status, or None while the deployment has no process answering (the reconciler restarts it)."""
    try:
        return client.runs.get(thread_id, run_id)["status"]
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code in (502, 503):
            return None
        raise


def test_deleting_a_deployment_drops_its_database_and_a_new_one_of_that_name_sees_none_of_its_data(
        stack_factory, owner, tmp_path):
    stack = stack_factory()
    api = Api(stack.url, owner)
    custom_url = deploy_project(api, copy_project(tmp_path), name="reused-name")
    old = deployment_of(custom_url)
    client = SdkClient("sync", custom_url, api_key=owner)
    client.threads.create(metadata={"marker": "old"})
    client.store.put_item(["old"], "item", {"v": 1})
    assert client.store.get_item(["old"], "item")["value"] == {"v": 1}
    client.close()

    api.call("DELETE", f"/v2/deployments/{old.id}", expect=204)
    wait_for(lambda: not Deployment.objects.filter(id=old.id).exists(), timeout=60)
    assert not databases.exists(deployment_id=old.id)

    fresh_url = deploy_project(api, copy_project(tmp_path), name="reused-name")
    fresh = SdkClient("sync", fresh_url, api_key=owner)
    assert fresh.threads.search(metadata={"marker": "old"}) == []
    assert fresh.store.get_item(["old"], "item") is None
    fresh.close()

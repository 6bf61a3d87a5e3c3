"""The spec's typical flow against a live server and a worker: real builds, real processes, the stable URL."""

from __future__ import annotations

import json
import signal
import uuid

import httpx
import pytest
from django.conf import settings as django_settings

from accounts.services import api_key_create, workspace_create
from core.process_identity import pid_alive
from deployments.models import Revision
from tests.deployments.support_projects import GRAPH, git_repo, make_project, tarball
from tests.support_processes import wait_for
from tracing.models import Run

pytestmark = pytest.mark.live

HAPPY_PATH = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]
SLOW_CHECK = GRAPH.replace("class State", '''if os.environ.get("SLOW_CHECK") == "1" and "check_graphs" in sys.argv:
    import time
    print("slow check started", flush=True)
    time.sleep(5)


class State''')


class Api:
    """The control plane as a CI script would use it."""

    def __init__(self, url: str, key: str):
        self.url, self.client = url, httpx.Client(base_url=url, headers={"X-Api-Key": key}, timeout=30,
                                                  trust_env=False)
        self.seen: list[str] = []  # every response body, to check that no secret value ever appears

    def call(self, method: str, path: str, expect: int = 200, **kwargs):
        response = self.client.request(method, path, **kwargs)
        assert response.status_code == expect, (method, path, response.status_code, response.text)
        self.seen.append(response.text)
        return response.json() if response.content else None

    def create(self, body: dict) -> dict:
        return self.call("POST", "/v2/deployments", 201, json=body)

    def upload(self, deployment_id: str, data: bytes) -> str:
        target = self.call("POST", f"/v2/deployments/{deployment_id}/upload-url",
                           json={"supports_upload_headers": True})
        # As the CLI does it: no API key on the PUT, the URL authorises it.
        put = httpx.put(target["upload_url"], content=data, headers={"Content-Type": "application/gzip"},
                        trust_env=False)
        assert put.status_code == 200, put.text
        return target["object_path"]

    def wait_status(self, deployment_id: str, revision_id: str, wanted: str, timeout: float = 150) -> list[str]:
        """Poll the revision as the spec's clients do; return the statuses seen, in order."""
        seen: list[str] = []

        def reached():
            status = self.call("GET", f"/v2/deployments/{deployment_id}/revisions/{revision_id}")["status"]
            if not seen or seen[-1] != status:
                seen.append(status)
            return status == wanted or (status in ("BUILD_FAILED", "DEPLOY_FAILED", "CREATE_FAILED") and
                                        pytest.fail(f"{status}: {self.logs(deployment_id, revision_id)}"))

        wait_for(reached, timeout=timeout, interval=0.25)
        return seen

    def logs(self, deployment_id: str, revision_id: str, log_type: str = "build") -> str:
        body = self.call("GET", f"/v2/deployments/{deployment_id}/revisions/{revision_id}/logs",
                         params={"type": log_type, "limit": 1000})
        return "\n".join(entry["message"] for entry in body["logs"])


def run_graph(custom_url: str, key: str, *, stream: bool = False) -> dict:
    """Run the graph once through the deployment's stable URL; return the thread's state values."""
    thread = str(uuid.uuid4())
    headers = {"X-Api-Key": key}
    with httpx.Client(base_url=f"{custom_url}/api", headers=headers, timeout=30, trust_env=False) as client:
        command = {"id": 1, "method": "run.start", "params": {"input": {"messages": []}, "assistant_id": "_"}}
        if stream:
            events = _stream_run(client, thread, command)
            assert [e["params"]["data"]["event"] for e in events] == ["running", "completed"]
        else:
            result = client.post(f"/threads/{thread}/commands", json=command).json()
            assert result["type"] == "success", result
        state = wait_for(lambda: _values(client, thread), timeout=30)
    return state


def _stream_run(client: httpx.Client, thread: str, command: dict) -> list[dict]:
    """Start a run while an SSE stream is attached through the proxy; collect lifecycle events as they arrive."""
    events = []
    with client.stream("POST", f"/threads/{thread}/stream", json={"channels": ["lifecycle"]}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert client.post(f"/threads/{thread}/commands", json=command).json()["type"] == "success"
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: "):]))
                if events[-1]["params"]["data"].get("event") == "completed":
                    break
    return events


def _values(client: httpx.Client, thread: str):
    response = client.get(f"/threads/{thread}/state")
    return response.status_code == 200 and response.json()["values"].get("env") and response.json()["values"]


@pytest.fixture
def owner(workspace):
    return api_key_create(workspaces=[workspace])[1]


def test_the_typical_flow_from_a_tarball_and_from_a_git_repository(stack_factory, owner, workspace, tmp_path):
    stack = stack_factory()
    api = Api(stack.url, owner)
    # 1. POST a deployment (the tarball arrives through upload-url and a PATCH, as with LangChain's CLI).
    deployment = api.create({"name": "flow", "source": "internal_source", "source_config": {"deployment_type": "dev"},
                             "source_revision_config": {}, "secrets": [{"name": "MY_SECRET", "value": "first-value"}]})
    object_path = api.upload(deployment["id"], tarball(make_project(tmp_path / "tar-project")))
    deployment = api.call("PATCH", f"/v2/deployments/{deployment['id']}", json={
        "revision_source": "internal_source",
        "source_revision_config": {"source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"}})
    first = deployment["latest_revision_id"]
    # The git deployment's first revision comes with its create.
    repo = make_project(tmp_path / "repos" / "agent", version="git-v1")
    git = api.create({"name": "flow-git", "source": "github", "source_revision_config": {"repo_ref": "main"},
                      "source_config": {"repo_url": git_repo(repo), "deployment_type": "dev"}})
    assert git["latest_revision_id"]
    # 2-3. GET the deployment, poll the revision until DEPLOYED through the real statuses.
    assert api.call("GET", f"/v2/deployments/{deployment['id']}")["status"] == "AWAITING_DATABASE"
    seen = api.wait_status(deployment["id"], first, "DEPLOYED")
    assert seen == [s for s in HAPPY_PATH if s in seen] and len(seen) >= 3, seen
    deployment = api.call("GET", f"/v2/deployments/{deployment['id']}")
    assert deployment["status"] == "READY" and deployment["active_revision_id"] == first
    custom_url = deployment["source_config"]["custom_url"]
    assert custom_url == f"{stack.url}/deployments/{deployment['id']}"

    values = run_graph(custom_url, owner, stream=True)
    env = values["env"]
    assert values["version"] == "v1" and env["MY_SECRET"] == "first-value"
    # The served process never sees the service's secrets: its database is the deployment's own (on PostgreSQL a
    # database and role named from the deployment), and the service's Redis comes with the deployment's key prefix.
    database = env.get("DATABASE_URL") or env["SQLITE_PATH"]
    assert deployment["id"].replace("-", "") in database or deployment["id"] in database, database
    assert "REDIS_URL" not in env or deployment["id"].replace("-", "") in env["REDIS_KEY_PREFIX"]
    assert django_settings.SECRET_KEY not in env.values()
    assert not set(django_settings.FIELD_ENCRYPTION_KEY) & {v for part in env.values() for v in part.split(",")}
    assert env["LANGSMITH_PROJECT"] == "flow" and env["LANGSMITH_ENDPOINT"] == stack.url
    # The graph's runs are traced into the deployment's own project, in its workspace, through our trace API.
    wait_for(lambda: Run.objects.filter(workspace=workspace, session__name="flow").exists(), timeout=60,
             describe=stack.logs)
    _check_access(custom_url, workspace)
    first_pid = Revision.objects.get(id=first).serving_pid
    assert pid_alive(first_pid)

    # 4. PATCH a new secret: a second revision, served at the same URL; the old process is gone.
    deployment = api.call("PATCH", f"/v2/deployments/{deployment['id']}",
                          json={"secrets": [{"name": "MY_SECRET", "value": "second-value"}]})
    second = deployment["latest_revision_id"]
    assert second != first and deployment["source_config"]["custom_url"] == custom_url
    api.wait_status(deployment["id"], second, "DEPLOYED")
    assert run_graph(custom_url, owner)["env"]["MY_SECRET"] == "second-value"
    wait_for(lambda: not pid_alive(first_pid), timeout=30)
    # The switch happened once the new process was healthy, and only then was the old one stopped.
    second_log = api.logs(deployment["id"], second, "deploy")
    assert second_log.index("Health check passed") < second_log.index("DEPLOYED")
    # The pipeline records the replacement just after the old process has stopped: wait for the line.
    wait_for(lambda: "Replaced by revision #2; drained and stopped." in api.logs(deployment["id"], first, "deploy"),
             timeout=30)
    assert api.call("GET", f"/v2/deployments/{deployment['id']}")["source_config"]["custom_url"] == custom_url

    # The git deployment serves its commit too.
    api.wait_status(git["id"], git["latest_revision_id"], "DEPLOYED")
    git_url = api.call("GET", f"/v2/deployments/{git['id']}")["source_config"]["custom_url"]
    assert run_graph(git_url, owner)["version"] == "git-v1"
    git_revision = api.call("GET", f"/v2/deployments/{git['id']}/revisions/{git['latest_revision_id']}")
    assert len(git_revision["source_revision_config"]["repo_commit_sha"]) == 40

    # Logs, and no secret value in anything the API said.
    assert "graph 'agent': OK" in api.logs(deployment["id"], second)
    assert "Health check passed" in api.logs(deployment["id"], second, "deploy")
    api.call("GET", "/v2/deployments")
    assert not any("first-value" in body or "second-value" in body for body in api.seen)

    # DELETE stops what was served.
    second_pid = Revision.objects.get(id=second).serving_pid
    api.call("DELETE", f"/v2/deployments/{deployment['id']}", 204)
    wait_for(lambda: not pid_alive(second_pid), timeout=30, describe=stack.logs)
    wait_for(lambda: api.client.get(f"/v2/deployments/{deployment['id']}").status_code == 404, timeout=30)
    assert httpx.get(f"{custom_url}/api/threads", headers={"X-Api-Key": owner}, trust_env=False).status_code == 404


def _check_access(custom_url: str, workspace) -> None:
    """The stable URL needs a key of the deployment's workspace with chat:use."""
    other = workspace_create(name="someone-else")
    cases = [({}, 401), ({"X-Api-Key": api_key_create(workspaces=[other])[1]}, 404),
             ({"X-Api-Key": api_key_create(workspaces=[workspace], permissions=["deployments:read"])[1]}, 403),
             ({"X-Api-Key": api_key_create(workspaces=[workspace], permissions=["chat:use"])[1]}, 200)]
    for headers, status in cases:
        assert httpx.get(f"{custom_url}/api/threads", headers=headers, trust_env=False).status_code == status


def test_workers_die_and_come_back_interrupts_stop_builds(stack_factory, owner, tmp_path):
    stack = stack_factory(WORKER_LEASE_SECONDS="3")
    api = Api(stack.url, owner)
    repo = make_project(tmp_path / "repos" / "steady")
    steady = api.create({"name": "steady", "source": "github", "source_config": {"repo_url": git_repo(repo)}})
    api.wait_status(steady["id"], steady["latest_revision_id"], "DEPLOYED")
    custom_url = api.call("GET", f"/v2/deployments/{steady['id']}")["source_config"]["custom_url"]
    served_pid = Revision.objects.get(id=steady["latest_revision_id"]).serving_pid

    slow_repo = make_project(tmp_path / "repos" / "slow", graph=SLOW_CHECK)
    slow = api.create({"name": "slow", "source": "github", "source_config": {"repo_url": git_repo(slow_repo)},
                       "secrets": [{"name": "SLOW_CHECK", "value": "1"}]})
    wait_for(lambda: "slow check started" in api.logs(slow["id"], slow["latest_revision_id"]), timeout=90)
    # The worker dies mid-build: its children (the build, the steady deployment's server) die with it.
    stack.workers[0].kill(signal.SIGKILL)
    wait_for(lambda: not pid_alive(served_pid), timeout=15)
    assert api.call("GET", f"/v2/deployments/{slow['id']}/revisions/{slow['latest_revision_id']}")["status"] == \
        "BUILDING"
    stack.start_worker()
    # Another worker takes the build over once the lease expires, and the reconciler restarts the active revision.
    api.wait_status(slow["id"], slow["latest_revision_id"], "DEPLOYED", timeout=180)
    assert "running it again (attempt 2 of 3)" in api.logs(slow["id"], slow["latest_revision_id"])
    assert run_graph(custom_url, owner)["version"] == "v1"

    # An interrupt stops a build in progress (the check is killed, not waited for).
    again = api.call("POST", f"/v2/deployments/{slow['id']}/revisions/{slow['latest_revision_id']}/redeploy")
    rid = again["latest_revision_id"]
    wait_for(lambda: "slow check started" in api.logs(slow["id"], rid), timeout=90)
    interrupted = api.call("POST", f"/v2/deployments/{slow['id']}/revisions/{rid}/interrupt")
    assert interrupted["status"] == "INTERRUPTED"
    wait_for(lambda: "Step stopped: the revision is now INTERRUPTED" in api.logs(slow["id"], rid), timeout=30)
    assert api.call("GET", f"/v2/deployments/{slow['id']}")["active_revision_id"] == slow["latest_revision_id"]
    assert run_graph(api.call("GET", f"/v2/deployments/{slow['id']}")["source_config"]["custom_url"], owner)

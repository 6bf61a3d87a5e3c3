from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.services import job_claim, job_finish
from deployments.services import get_runner
from tests.deployments.support_projects import make_project, tarball
from tests.deployments.support_wheels import wheel_of_installed
from tests.support_processes import ChildProcess, LiveServer

# What test projects depend on beyond the runtime, installed offline from wheels of the test environment's copies.
PROJECT_EXTRAS = ("starlette",)


@pytest.fixture(scope="session")
def pip_args(tmp_path_factory) -> str:
    """Offline builds: pip finds nothing but PROJECT_EXTRAS' wheels."""
    wheelhouse = tmp_path_factory.mktemp("wheelhouse")
    for name in PROJECT_EXTRAS:
        wheel_of_installed(name, wheelhouse)
    return f"--no-index --find-links {wheelhouse}"


@pytest.fixture
def deploy_settings(settings, tmp_path, pip_args):
    """The local runner on, its files under tmp_path, file:// repos allowed under tmp_path/repos, pip offline; the
    deployments' own databases dropped afterwards (on PostgreSQL they outlive the test database otherwise)."""
    settings.DEPLOY_LOCAL_RUNNER_ENABLED = True
    settings.DEPLOY_ROOT = tmp_path / "deploy-root"
    settings.DEPLOY_GIT_ALLOWED_ROOTS = [str(tmp_path / "repos")]
    settings.DEPLOY_PIP_ARGS = pip_args
    settings.DEPLOY_HEALTH_TIMEOUT_SECONDS = 60
    settings.DEPLOY_DRAIN_SECONDS = 5
    (tmp_path / "repos").mkdir(exist_ok=True)
    yield settings
    get_runner().stop_strays(set())
    drop_deployment_databases()


def drop_deployment_databases() -> None:
    """Drop the database of every deployment the test made, cutting off whatever a test left connected."""
    from django.db import connection

    from deployments import databases
    from deployments.models import Deployment

    for deployment_id in Deployment.objects.values_list("id", flat=True):
        if connection.vendor != "postgresql":
            databases.drop(deployment_id=deployment_id)
            continue
        name = databases.database_name(deployment_id)
        with databases._admin_connection() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{name}"')


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "project")


@pytest.fixture
def uploaded(api_client):
    """uploaded(deployment_id, data) -> object_path, through upload-url and a PUT to the signed URL."""

    def upload(deployment_id, data: bytes) -> str:
        response = api_client.post(f"/v2/deployments/{deployment_id}/upload-url", {"supports_upload_headers": True},
                                   format="json")
        assert response.status_code == 200, response.content
        body = response.json()
        path = body["upload_url"].split("://", 1)[1].split("/", 1)[1]
        put = api_client.generic("PUT", "/" + path, data, content_type="application/gzip")
        assert put.status_code == 200, put.content
        return body["object_path"]

    return upload


@pytest.fixture
def internal_deployment(api_client, deploy_settings, project, uploaded):
    """create(name, data=None, secrets=None) -> (deployment json) with its first revision from a tarball."""

    def create(name="agent", data=None, secrets=None):
        response = api_client.post("/v2/deployments", {
            "name": name, "source": "internal_source", "source_config": {"deployment_type": "dev"},
            "source_revision_config": {}, "secrets": secrets or []}, format="json")
        assert response.status_code == 201, response.content
        deployment = response.json()
        object_path = uploaded(deployment["id"], data or tarball(project))
        patched = api_client.patch(f"/v2/deployments/{deployment['id']}", {
            "revision_source": "internal_source",
            "source_revision_config": {"source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"},
        }, format="json")
        assert patched.status_code == 200, patched.content
        return patched.json()

    return create


@pytest.fixture
def run_jobs():
    """run_jobs() runs queued deployment jobs in this process until none is left; returns their kinds."""
    def run(limit: int = 10):
        from core.registry import HANDLERS

        ran = []
        for _ in range(limit):
            job = job_claim(worker_id="test", queues=["deployments"], lease_seconds=600)
            if job is None:
                break
            HANDLERS[job.kind].func(job, SimpleNamespace(lost=False))
            job_finish(job=job, worker_id="test")
            ran.append(job.kind)
        return ran

    yield run
    # Whatever a test left running in this process is stopped.
    runner = get_runner()
    runner.stop_strays(set())


class Stack:
    """A live server and a worker sharing the test database, with the local runner on."""

    def __init__(self, tmp_path, settings, pip_args: str, **extra_env):
        self.tmp_path = tmp_path
        self.env = {
            "DEPLOY_ROOT": str(tmp_path / "deploy-root"), "DEPLOY_LOCAL_RUNNER_ENABLED": "true",
            "DEPLOY_GIT_ALLOWED_ROOTS": str(tmp_path / "repos"), "DEPLOY_PIP_ARGS": pip_args,
            "WORKER_POLL_SECONDS": "0.2", "DEPLOY_RECONCILE_SECONDS": "2", "DEPLOY_HEALTH_TIMEOUT_SECONDS": "90",
            # The service's own secrets, explicitly: tests assert that served graphs never see them.
            "SECRET_KEY": settings.SECRET_KEY, "FIELD_ENCRYPTION_KEY": ",".join(settings.FIELD_ENCRYPTION_KEY),
            "NO_PROXY": "127.0.0.1,localhost", **extra_env,
        }
        (tmp_path / "repos").mkdir(exist_ok=True)
        self.server = LiveServer(env=self.env, log_path=tmp_path / "server.log").start()
        self.url = self.server.url
        self.env["PUBLIC_BASE_URL"] = self.url
        self.workers: list[ChildProcess] = []
        self.start_worker()

    def start_worker(self) -> ChildProcess:
        worker = ChildProcess("run_worker", env=self.env,
                              log_path=self.tmp_path / f"worker-{len(self.workers)}.log").start()
        self.workers.append(worker)
        return worker

    def logs(self) -> str:
        return "\n".join([self.server.output()] + [w.output()[-6000:] for w in self.workers])

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.server.stop()


@pytest.fixture
def stack_factory(transactional_db, tmp_path, settings, pip_args):
    started = []

    def start(**extra_env) -> Stack:
        stack = Stack(tmp_path, settings, pip_args, **extra_env)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.stop()
    drop_deployment_databases()

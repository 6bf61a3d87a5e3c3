"""The revision pipeline run in this process: each failure ends in the right status with its cause in the log."""

from __future__ import annotations

import time

import pytest

from core.models import Job
from core.services import job_claim, job_enqueue
from deployments import pipeline, runtime_site
from deployments.models import Deployment, Revision, RevisionLog
from tests.deployments.support_projects import CONFIG, GRAPH, make_project, tarball

pytestmark = pytest.mark.django_db(transaction=True)
LANGGRAPH = runtime_site.runtime_pins()["langgraph"]
LANGGRAPH_NEXT_MINOR = "{}.{}".format(LANGGRAPH.split(".")[0], int(LANGGRAPH.split(".")[1]) + 1)


def logs(revision_id, log_type=None) -> str:
    entries = RevisionLog.objects.filter(revision_id=revision_id).order_by("id")
    if log_type:
        entries = entries.filter(type=log_type)
    return "\n".join(entries.values_list("message", flat=True))


def deploy_variant(internal_deployment, tmp_path, run_jobs, *, secrets=None, **project):
    data = tarball(make_project(tmp_path / "variant", **project))
    deployment = internal_deployment(data=data, secrets=secrets)
    run_jobs()
    return Revision.objects.get(id=deployment["latest_revision_id"])


@pytest.mark.parametrize("project, cause", [
    ({"config": "{not json"}, "is not valid JSON"),
    ({"config": {"dependencies": ["."], "graphs": {}}}, "non-empty \"graphs\""),
    ({"config": {"dependencies": ["."], "graphs": {"agent": "./missing.py:graph"}}}, "does not exist"),
    ({"config": {"graphs": {"agent": "./graph.py:graph"}}}, "\"dependencies\""),
    ({"graph": "raise RuntimeError('boom at import time')\n"}, "boom at import time"),
    ({"config": {**CONFIG, "dependencies": [".", "surely-not-a-package-6f1d==1.0"]}},
     "No matching distribution found for surely-not-a-package-6f1d"),
    ({"config": {**CONFIG, "dependencies": [".", "langgraph==0.0.1"]}},
     f"Dependency 'langgraph==0.0.1' conflicts with the runtime, which runs langgraph {LANGGRAPH}: write "
     f"langgraph>={LANGGRAPH},<{LANGGRAPH_NEXT_MINOR} (or leave langgraph out; the runtime provides it)."),
    ({"config": CONFIG, "files": {"requirements.txt": "langgraph<0.1\n"}},
     f"'langgraph<0.1' conflicts with the runtime, which runs langgraph {LANGGRAPH}"),
    # Installed beside the service (pytest needs it), but not part of the runtime: a revision does not see it.
    ({"graph": "import iniconfig\n" + GRAPH}, "No module named 'iniconfig'"),
])
def test_a_broken_build_ends_build_failed_with_the_cause_in_the_build_log(internal_deployment, tmp_path, run_jobs,
                                                                          project, cause):
    revision = deploy_variant(internal_deployment, tmp_path, run_jobs, **project)
    assert revision.status == "BUILD_FAILED"
    assert cause in logs(revision.id, "build"), logs(revision.id)
    assert not has_job("deployments.deploy", revision)
    assert Deployment.objects.get(id=revision.deployment_id).active_revision is None


def test_a_dependency_that_needs_another_version_of_a_runtime_package_fails_in_one_line_naming_both(
        internal_deployment, tmp_path, run_jobs, settings):
    wheelhouse = tmp_path / "wheels"
    make_wheel(wheelhouse, "oldlib", "1.0", requires=["langgraph<1.0"])
    settings.DEPLOY_PIP_ARGS = f"--no-index --find-links {wheelhouse}"
    revision = deploy_variant(internal_deployment, tmp_path, run_jobs,
                              config={**CONFIG, "dependencies": [".", "oldlib==1.0"]})
    assert revision.status == "BUILD_FAILED"
    assert revision.status_message == (f"oldlib 1.0 needs langgraph<1.0, but the runtime runs langgraph {LANGGRAPH}: "
                                       f"choose a version of oldlib that accepts langgraph {LANGGRAPH}.")


def make_wheel(into, name: str, version: str, *, requires: list[str]) -> None:
    """A wheel with one empty module and the given requirements."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(into / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{name}.py", "")
        wheel.writestr(f"{info}/METADATA", "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                                                      *(f"Requires-Dist: {r}" for r in requires)]) + "\n")
        wheel.writestr(f"{info}/WHEEL",
                       "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", f"{name}.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")


def has_job(kind, revision) -> bool:
    return Job.objects.filter(kind=kind, payload__revision_id=str(revision.id)).exists()


def test_a_server_that_exits_at_once_ends_deploy_failed_with_its_output(internal_deployment, tmp_path, run_jobs):
    revision = deploy_variant(internal_deployment, tmp_path, run_jobs,
                              secrets=[{"name": "EXIT_AT_START", "value": "1"}])
    assert revision.status == "DEPLOY_FAILED"
    deploy_log = logs(revision.id, "deploy")
    assert "exiting at start as asked" in deploy_log and "exited with code 3" in deploy_log
    # Its database was created before it started: the deployment no longer awaits one.
    assert Deployment.objects.get(id=revision.deployment_id).status == "READY"


def _claimed_job(revision, kind, attempts):
    job_enqueue(kind=kind, payload={"revision_id": str(revision.id)})
    job = job_claim(worker_id="w", queues=["deployments"], lease_seconds=60)
    job.attempts = attempts
    return job


class Lease:
    lost = False


def test_a_step_whose_worker_died_too_often_fails_cleanly_instead_of_hanging(internal_deployment, run_jobs, settings):
    deployment = internal_deployment()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    Revision.objects.filter(id=revision.id).update(status="BUILDING")
    Job.objects.all().delete()
    job = _claimed_job(revision, "deployments.build", attempts=settings.DEPLOY_STEP_MAX_ATTEMPTS + 1)
    pipeline.build_step(revision_id=str(revision.id), job=job, lease=Lease())
    revision.refresh_from_db()
    assert revision.status == "BUILD_FAILED" and "stopped 3 times" in revision.status_message


def test_the_reconciler_fails_a_live_revision_whose_job_is_gone(internal_deployment):
    deployment = internal_deployment()
    Job.objects.all().delete()
    pipeline.reconcile()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    assert revision.status == "CREATE_FAILED" and "job ended" in revision.status_message


def test_a_git_ref_that_does_not_exist_fails_the_build(api_client, deploy_settings, tmp_path, run_jobs):
    from tests.deployments.support_projects import git_repo

    url = git_repo(make_project(tmp_path / "repos" / "agent"))
    body = {"name": "git-agent", "source": "github", "source_config": {"repo_url": url},
            "source_revision_config": {"repo_ref": "no-such-branch"}}
    deployment = api_client.post("/v2/deployments", body, format="json").json()
    run_jobs()
    failed = Revision.objects.get(id=deployment["latest_revision_id"])
    assert failed.status == "BUILD_FAILED" and "no-such-branch" in logs(failed.id, "build")


def test_a_package_graph_with_an_already_installed_dependency_builds_offline(internal_deployment, tmp_path, run_jobs):
    from tests.deployments.support_projects import GRAPH

    project = make_project(tmp_path / "pkg", config={"dependencies": [".", "httpx>=0.27"],
                                                     "graphs": {"agent": "my_agent.graph:graph"}},
                           files={"my_agent/__init__.py": "", "my_agent/graph.py": GRAPH})
    deployment = internal_deployment(data=tarball(project))
    assert run_jobs(limit=1) == ["deployments.build"]
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    build_log = logs(revision.id, "build")
    assert revision.status == "AWAITING_DEPLOY", build_log
    assert "$ pip install 'httpx>=0.27'" in build_log and "Requirement already satisfied: httpx" in build_log
    assert "graph 'agent': OK" in build_log


def test_the_reconciler_gives_a_busy_replica_one_more_period_but_restarts_a_gone_one(internal_deployment):
    from types import SimpleNamespace

    from deployments.runners import ReplicaHealth

    revision = Revision.objects.get(id=internal_deployment()["latest_revision_id"])
    healthy, busy, gone = ReplicaHealth(0, True, True), ReplicaHealth(1, False, True), ReplicaHealth(2, False, False)
    runner = SimpleNamespace(replica_health=lambda r: [healthy, busy, gone])
    assert pipeline._replicas_to_restart(runner, revision) == ([2], 3)
    # Still not answering one period later: restarted.
    assert pipeline._replicas_to_restart(runner, revision) == ([1, 2], 3)
    # Answering again in between: the busy one starts over with one more period.
    runner = SimpleNamespace(replica_health=lambda r: [healthy, ReplicaHealth(1, True, True), gone])
    assert pipeline._replicas_to_restart(runner, revision) == ([2], 3)
    runner = SimpleNamespace(replica_health=lambda r: [healthy, busy, gone])
    assert pipeline._replicas_to_restart(runner, revision) == ([2], 3)


WARNING_GRAPH = GRAPH.replace("from langgraph.graph", '''import logging

if "serve_graphs" in sys.argv:
    logging.getLogger("agent").warning("the agent warns at start")
    try:
        raise ValueError("a logged failure")
    except ValueError:
        logging.getLogger("agent").exception("the agent fails to reach its tool")
    logging.getLogger("agent").info("the agent carries on")

from langgraph.graph''')


def test_a_serving_process_s_warnings_and_errors_keep_their_level_in_the_deploy_log(internal_deployment, tmp_path,
                                                                                     run_jobs, api_client):
    revision = deploy_variant(internal_deployment, tmp_path, run_jobs, graph=WARNING_GRAPH)
    assert revision.status == "DEPLOYED", logs(revision.id)
    url = f"/v2/deployments/{revision.deployment_id}/revisions/{revision.id}/logs?type=deploy"
    deadline = time.monotonic() + 10  # the output is copied into the log every half second
    while "periodic jobs only" not in logs(revision.id, "deploy") and time.monotonic() < deadline:
        time.sleep(0.2)
    levels = {entry["message"].split(" ", 3)[-1]: entry["level"]
              for entry in api_client.get(url + "&limit=200").json()["logs"]}
    assert levels["agent the agent warns at start"] == "WARNING"
    assert levels["agent the agent fails to reach its tool"] == "ERROR"
    assert levels["agent the agent carries on"] == "INFO"
    errors = [entry["message"] for entry in api_client.get(url + "&level=ERROR").json()["logs"]]
    assert any(message.startswith("ValueError: a logged failure") for message in errors), errors
    # The serving process's periodic-jobs worker claims no queue, and says so without an internal name.
    assert "queues:" not in logs(revision.id, "deploy")

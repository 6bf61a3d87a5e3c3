"""Deleting deployments: one at a time with `delete_tracing_project` and `force`, or many with the bulk DELETE."""

from __future__ import annotations

import uuid

import pytest

from core.models import Job
from core.process_identity import pid_alive
from deployments.models import Deployment, Revision
from deployments.services import get_runner
from deployments.uploads import uploads_root
from tests.tracing.support_runs import make_runs
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db


def url(deployment_id, **params) -> str:
    query = "&".join(f"{name}={value}" for name, value in params.items())
    return f"/v2/deployments/{deployment_id}" + (f"?{query}" if query else "")


def traced(deployment, count=3) -> TracingProject:
    """The deployment's tracing project, with `count` runs in it."""
    project = TracingProject.objects.get(id=Deployment.objects.get(id=deployment["id"]).tracing_project_id)
    make_runs(project.workspace, project, count)
    return project


def teardown_jobs(deployment_id) -> int:
    return Job.objects.filter(kind="deployments.teardown", payload__deployment_id=str(deployment_id)).count()


# --- DELETE /v2/deployments/{id}: delete_tracing_project --------------------------------------------------------
def test_a_deleted_deployment_keeps_its_tracing_project_and_runs_by_default(api_client, internal_deployment,
                                                                            run_jobs):
    deployment = internal_deployment()
    project = traced(deployment)
    assert api_client.delete(url(deployment["id"])).status_code == 204
    assert "deployments.teardown" in run_jobs()
    assert not Deployment.objects.filter(id=deployment["id"]).exists()
    assert TracingProject.objects.filter(id=project.id).exists() and Run.objects.filter(session=project).count() == 3


def test_delete_tracing_project_deletes_the_project_and_its_runs_once_the_processes_are_gone(
        api_client, internal_deployment, run_jobs, workspace):
    deployment = internal_deployment()
    project = traced(deployment)
    elsewhere = TracingProject.objects.create(workspace=workspace, name="another project")
    make_runs(workspace, elsewhere, 2)
    assert api_client.delete(url(deployment["id"], delete_tracing_project="true")).status_code == 204
    # The project goes with the teardown, after the processes stopped: not while they may still trace.
    assert TracingProject.objects.filter(id=project.id).exists()
    run_jobs()
    assert not TracingProject.objects.filter(id=project.id).exists()
    assert not Run.objects.filter(session_id=project.id).exists()
    assert Run.objects.filter(session=elsewhere).count() == 2


@pytest.mark.parametrize("params, loc", [
    ({"force": "maybe"}, ["query", "force"]), ({"delete_tracing_project": "2"}, ["query", "delete_tracing_project"]),
])
def test_a_delete_option_that_is_not_a_boolean_is_422_and_deletes_nothing(api_client, internal_deployment, params,
                                                                          loc):
    deployment = internal_deployment()
    response = api_client.delete(url(deployment["id"], **params))
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert Deployment.objects.get(id=deployment["id"]).status == "AWAITING_DATABASE"


# --- DELETE /v2/deployments/{id}: force ---------------------------------------------------------------------------
def test_force_on_a_deployment_that_is_not_deleted_is_400_and_changes_nothing(api_client, internal_deployment):
    deployment = internal_deployment()
    response = api_client.delete(url(deployment["id"], force="true"))
    assert response.status_code == 400
    assert "AWAITING_DELETE" in response.json()["detail"] and "without force" in response.json()["detail"]
    assert Deployment.objects.get(id=deployment["id"]).status == "AWAITING_DATABASE"
    assert teardown_jobs(deployment["id"]) == 0


def test_force_tears_a_deleted_deployment_down_at_once_and_its_queued_job_then_does_nothing(
        api_client, internal_deployment, run_jobs):
    deployment = internal_deployment()
    assert api_client.delete(url(deployment["id"])).status_code == 204
    # A soft-deleted deployment is still found (GET shows it AWAITING_DELETE): force finds it the same way.
    assert api_client.get(url(deployment["id"])).json()["status"] == "AWAITING_DELETE"
    uploads = uploads_root() / deployment["tenant_id"] / deployment["id"]
    assert uploads.exists()
    response = api_client.delete(url(deployment["id"], force="true"))
    assert response.status_code == 204 and response.content == b""
    assert not Deployment.objects.filter(id=deployment["id"]).exists()
    assert not Revision.objects.filter(deployment_id=deployment["id"]).exists() and not uploads.exists()
    assert api_client.get(url(deployment["id"])).status_code == 404
    assert api_client.delete(url(deployment["id"], force="true")).status_code == 404
    # The revision's build and the teardown, both still queued, find nothing left to do.
    assert run_jobs() == ["deployments.build", "deployments.teardown"]
    assert not Deployment.objects.filter(id=deployment["id"]).exists()


def test_force_honours_the_tracing_project_deletion_the_first_delete_asked_for(api_client, internal_deployment):
    deployment = internal_deployment()
    project = traced(deployment)
    api_client.delete(url(deployment["id"], delete_tracing_project="true"))
    assert api_client.delete(url(deployment["id"], force="1")).status_code == 204
    assert not TracingProject.objects.filter(id=project.id).exists()


def test_force_with_delete_tracing_project_deletes_the_project_the_first_delete_kept(api_client,
                                                                                     internal_deployment):
    deployment = internal_deployment()
    project = traced(deployment)
    api_client.delete(url(deployment["id"]))
    assert api_client.delete(url(deployment["id"], force="true", delete_tracing_project="true")).status_code == 204
    assert not TracingProject.objects.filter(id=project.id).exists()


@pytest.mark.django_db(transaction=True)
def test_force_stops_a_served_revision_and_removes_its_files(api_client, internal_deployment, run_jobs):
    deployment = internal_deployment()
    run_jobs()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    assert revision.status == "DEPLOYED", revision.status_message
    folder = get_runner().dirs(revision).root
    assert pid_alive(revision.serving_pid) and folder.exists()
    api_client.delete(url(deployment["id"]))
    assert api_client.delete(url(deployment["id"], force="true")).status_code == 204
    assert not pid_alive(revision.serving_pid) and not folder.exists()
    assert not Deployment.objects.filter(id=deployment["id"]).exists()


# --- DELETE /v2/deployments?deployment_ids=… ----------------------------------------------------------------------
@pytest.fixture
def three(internal_deployment):
    return [internal_deployment(name=f"agent-{index}")["id"] for index in range(3)]


def bulk(client, query: str):
    return client.delete(f"/v2/deployments?{query}")


def test_a_bulk_delete_of_deployments_that_all_exist_is_200_in_either_list_form(api_client, three):
    response = bulk(api_client, f"deployment_ids={three[0]}&deployment_ids={three[1]}")
    assert response.status_code == 200
    assert response.json() == {"deleted": three[:2], "errors": []}
    response = bulk(api_client, f"deployment_ids={three[2]},{three[0]}")
    assert response.status_code == 200 and response.json() == {"deleted": [three[2], three[0]], "errors": []}
    # Each deletion went through the one delete: soft, with its teardown queued once.
    assert {d.status for d in Deployment.objects.all()} == {"AWAITING_DELETE"}
    assert [teardown_jobs(d) for d in three] == [1, 1, 1]


def test_a_bulk_delete_with_some_ids_not_found_is_207_and_says_which(api_client, outsider_client, three):
    missing = str(uuid.uuid4())
    foreign = outsider_client.post("/v2/deployments", {"name": "theirs", "source": "internal_source"},
                                   format="json").json()["id"]
    # Both list forms at once, and an id given twice: deleted once.
    query = f"deployment_ids={three[0]},{missing}&deployment_ids={foreign}&deployment_ids={three[0]}"
    response = bulk(api_client, query)
    assert response.status_code == 207
    assert response.json() == {"deleted": [three[0]], "errors": [
        {"deployment_id": missing, "detail": f"Deployment ID {missing} not found."},
        {"deployment_id": foreign, "detail": f"Deployment ID {foreign} not found."}]}
    assert Deployment.objects.get(id=foreign).status == "AWAITING_DATABASE"
    assert Deployment.objects.get(id=three[1]).status == "AWAITING_DATABASE"


def test_a_bulk_delete_where_nothing_is_found_is_404(api_client, three):
    missing = [str(uuid.uuid4()), str(uuid.uuid4())]
    one = bulk(api_client, f"deployment_ids={missing[0]}")
    assert one.status_code == 404 and one.json() == {"detail": f"Deployment ID {missing[0]} not found."}
    both = bulk(api_client, f"deployment_ids={','.join(missing)}")
    assert both.status_code == 404 and both.json() == {"detail": f"Deployment IDs {', '.join(missing)} not found."}
    assert not Deployment.objects.filter(status="AWAITING_DELETE").exists()


@pytest.mark.parametrize("query, loc, type_", [
    ("", ["query", "deployment_ids"], "missing"),
    ("deployment_ids=", ["query", "deployment_ids"], "empty"),
    ("deployment_ids=,", ["query", "deployment_ids"], "empty"),
    ("deployment_ids=not-a-uuid", ["query", "deployment_ids", 0], "uuid_parsing"),
    ("deployment_ids=" + ",".join(str(uuid.UUID(int=i)) for i in range(101)), ["query", "deployment_ids"],
     "max_length"),
], ids=["missing", "empty", "only-commas", "not-a-uuid", "101-ids"])
def test_a_bulk_delete_without_a_valid_list_of_at_most_100_ids_is_422(api_client, three, query, loc, type_):
    response = bulk(api_client, query)
    assert response.status_code == 422, response.content
    assert {k: response.json()["detail"][0][k] for k in ("loc", "type")} == {"loc": loc, "type": type_}
    assert not Deployment.objects.filter(status="AWAITING_DELETE").exists()


def test_a_bulk_delete_needs_deployments_manage(make_client, workspace, three):
    reader = make_client(workspace, permissions=["deployments:read"])
    assert bulk(reader, f"deployment_ids={three[0]}").status_code == 403
    assert not Deployment.objects.filter(status="AWAITING_DELETE").exists()

"""The /v2/deployments API: bodies, revision semantics, paging, errors, permissions and tenant isolation."""

from __future__ import annotations

import json
import uuid

import pytest

from core.models import Job
from core.pagination import MAX_OFFSET
from deployments.models import Deployment, Revision
from tests.deployments.support_projects import git_repo, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo_url(deploy_settings, tmp_path):
    return git_repo(make_project(tmp_path / "repos" / "agent"))


def github_body(repo_url, name="gh-agent", **extra):
    return {"name": name, "source": "github",
            "source_config": {"repo_url": repo_url, "deployment_type": "dev", "build_on_push": False},
            "source_revision_config": {"repo_ref": "main", "langgraph_config_path": "langgraph.json"},
            "secrets": [{"name": "OPENAI_API_KEY", "value": "sk-very-secret"}], **extra}


def create(client, body):
    response = client.post("/v2/deployments", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def revisions(client, deployment_id):
    return client.get(f"/v2/deployments/{deployment_id}/revisions").json()["resources"]


def test_a_create_with_a_complete_source_makes_the_first_revision(api_client, repo_url, workspace, settings):
    deployment = create(api_client, github_body(repo_url))
    assert deployment["latest_revision_id"] and deployment["active_revision_id"] is None
    assert deployment["tenant_id"] == str(workspace.id) and deployment["status"] == "AWAITING_DATABASE"
    assert deployment["source_config"]["custom_url"] == f"{settings.PUBLIC_BASE_URL}/deployments/{deployment['id']}"
    revision = api_client.get(f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}")
    assert revision.status_code == 200
    assert revision.json()["status"] == "QUEUED" and revision.json()["source"] == "github"
    assert revision.json()["source_revision_config"]["repo_ref"] == "main"
    assert Job.objects.filter(kind="deployments.build", payload__revision_id=deployment["latest_revision_id"]).exists()


def test_an_internal_source_create_without_a_tarball_makes_no_revision(api_client, deploy_settings):
    deployment = create(api_client, {"name": "cli-agent", "source": "internal_source",
                                     "source_config": {"deployment_type": "dev_zero"}, "source_revision_config": {}})
    assert deployment["latest_revision_id"] is None
    assert revisions(api_client, deployment["id"]) == []
    # A PATCH without a tarball cannot make one either.
    response = api_client.patch(f"/v2/deployments/{deployment['id']}",
                                {"source_revision_config": {"langgraph_config_path": "langgraph.json"}}, format="json")
    assert response.status_code == 400 and "upload-url" in response.json()["detail"]


def test_a_patch_bringing_the_tarball_makes_the_first_revision(internal_deployment):
    deployment = internal_deployment()
    assert deployment["latest_revision_id"]
    assert deployment["source_revision_config"]["source_tarball_path"].endswith(".tar.gz")


def test_explicit_nulls_and_the_unknown_keys_real_clients_send_are_accepted(api_client, repo_url):
    body = github_body(repo_url)
    body["source_config"].update(integration_id=None, listener_id=None, resource_spec=None, custom_url=None,
                                 listener_config=None, install_command=None, build_command=None)
    body["source_revision_config"].update(image_uri=None, source_tarball_path=None)
    body["some_future_field"] = {"x": 1}
    deployment = create(api_client, body)
    response = api_client.patch(f"/v2/deployments/{deployment['id']}", {
        "revision_source": "github", "tracked_packages": ["google-adk:1.0"], "source_config": None,
        "source_revision_config": {"repo_ref": None, "image_uri": None}, "secrets": None, "unknown": True,
    }, format="json")
    assert response.status_code == 200, response.content
    assert len(revisions(api_client, deployment["id"])) == 1


def test_a_non_null_revision_field_always_makes_a_revision_even_when_unchanged(api_client, repo_url):
    deployment = create(api_client, github_body(repo_url))
    for _ in range(2):
        response = api_client.patch(f"/v2/deployments/{deployment['id']}",
                                    {"source_revision_config": {"repo_ref": "main"}}, format="json")
        assert response.status_code == 200
    assert len(revisions(api_client, deployment["id"])) == 3


def test_resource_spec_on_patch_makes_a_revision(api_client, repo_url):
    deployment = create(api_client, github_body(repo_url))
    response = api_client.patch(f"/v2/deployments/{deployment['id']}",
                                {"source_config": {"resource_spec": {"min_scale": 1}}}, format="json")
    assert response.status_code == 200
    assert response.json()["source_config"]["resource_spec"] == {"min_scale": 1}
    assert len(revisions(api_client, deployment["id"])) == 2


def test_null_absent_or_empty_secrets_leave_them_unchanged_and_a_list_replaces_them(api_client, repo_url):
    deployment = create(api_client, github_body(repo_url))
    url = f"/v2/deployments/{deployment['id']}"
    for body in ({"secrets": None}, {}, {"secrets": []}, {"source_config": {"build_on_push": True}}):
        response = api_client.patch(url, body, format="json")
        assert response.status_code == 200
        assert response.json()["secrets"] == [{"name": "OPENAI_API_KEY"}]
    assert len(revisions(api_client, deployment["id"])) == 1
    response = api_client.patch(url, {"secrets": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                                format="json")
    assert response.json()["secrets"] == [{"name": "A"}, {"name": "B"}]
    assert len(revisions(api_client, deployment["id"])) == 2
    stored = Deployment.objects.get(id=deployment["id"])
    assert "sk-very-secret" not in stored.secrets and json.loads(stored.secrets)[0] == {"name": "A", "value": "1"}


def test_secret_values_are_stored_encrypted_and_never_returned(api_client, repo_url):
    from django.db import connection

    deployment = create(api_client, github_body(repo_url))
    responses = [api_client.get(f"/v2/deployments/{deployment['id']}"), api_client.get("/v2/deployments"),
                 api_client.get(f"/v2/deployments/{deployment['id']}/revisions")]
    assert all(b"sk-very-secret" not in r.content for r in responses)
    with connection.cursor() as cursor:
        cursor.execute("SELECT secrets FROM deployments_deployment")
        raw_deployment = cursor.fetchone()[0]
        cursor.execute("SELECT secrets FROM deployments_revision")
        raw_revision = cursor.fetchone()[0]
    assert "sk-very-secret" not in raw_deployment and "sk-very-secret" not in raw_revision


@pytest.mark.parametrize("secrets, message", [
    ([{"name": "SECRET_KEY", "value": "x"}], "reserved"),
    ([{"name": "DATABASE_URL", "value": "x"}], "reserved"),
    ([{"name": "1BAD", "value": "x"}], "not a valid"),
    ([{"name": "A", "value": "x"}, {"name": "A", "value": "y"}], "twice"),
])
def test_bad_secret_names_are_400(api_client, repo_url, secrets, message):
    response = api_client.post("/v2/deployments", {**github_body(repo_url), "secrets": secrets}, format="json")
    assert response.status_code == 400 and message in response.json()["detail"]
    assert not Deployment.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"name": "renamed"}, "name"),
    ({"source": "internal_source"}, "source"),
    ({"source_config": {"deployment_type": "prod"}}, "deployment_type"),
    ({"source_config": {"repo_url": "https://example.com/other.git"}}, "repo_url"),
    ({"source_config": {"custom_url": "https://elsewhere.example"}}, "custom_url"),
    ({"revision_source": "internal_docker"}, "revision_source"),
])
def test_changing_an_immutable_field_is_400(api_client, repo_url, body, field):
    deployment = create(api_client, github_body(repo_url))
    response = api_client.patch(f"/v2/deployments/{deployment['id']}", body, format="json")
    assert response.status_code == 400 and field in response.json()["detail"]
    # Sending the same value is not a change.
    same = api_client.patch(f"/v2/deployments/{deployment['id']}", {"name": deployment["name"], "source": "github"},
                            format="json")
    assert same.status_code == 200


def test_a_revision_superseded_before_it_finished_ends_skipped(api_client, repo_url):
    deployment = create(api_client, github_body(repo_url))
    first = deployment["latest_revision_id"]
    api_client.patch(f"/v2/deployments/{deployment['id']}", {"source_revision_config": {"repo_ref": "main"}},
                     format="json")
    assert Revision.objects.get(id=first).status == "SKIPPED"
    assert [r["status"] for r in revisions(api_client, deployment["id"])] == ["QUEUED", "SKIPPED"]


def test_a_duplicate_name_is_409(api_client, repo_url):
    create(api_client, github_body(repo_url))
    response = api_client.post("/v2/deployments", github_body(repo_url), format="json")
    assert response.status_code == 409 and "already exists" in response.json()["detail"]


def test_a_name_of_the_longest_allowed_length_is_created_with_a_tracing_key_that_fits(api_client, repo_url):
    from accounts.models import ApiKey
    from deployments.models import Deployment

    name = "0" * 128
    deployment = create(api_client, {**github_body(repo_url), "name": name})
    assert deployment["name"] == name
    key = ApiKey.objects.get(id=Deployment.objects.get(id=deployment["id"]).tracing_api_key_id)
    assert len(key.name) <= 128 and key.name.startswith("deployment 000") and key.name.endswith("… (tracing)")


def test_an_idempotency_key_replays_the_same_deployment_and_refuses_another_body(api_client, repo_url):
    headers = {"HTTP_IDEMPOTENCY_KEY": "ci-run-42"}
    first = api_client.post("/v2/deployments", github_body(repo_url), format="json", **headers)
    again = api_client.post("/v2/deployments", github_body(repo_url), format="json", **headers)
    assert first.status_code == again.status_code == 201 and first.json()["id"] == again.json()["id"]
    other = api_client.post("/v2/deployments", github_body(repo_url, name="other"), format="json", **headers)
    assert other.status_code == 409 and Deployment.objects.count() == 1


def test_a_file_repository_outside_the_allowed_roots_is_refused(api_client, deploy_settings, tmp_path):
    outside = git_repo(make_project(tmp_path / "elsewhere"))
    response = api_client.post("/v2/deployments", github_body(outside), format="json")
    assert response.status_code == 400 and "DEPLOY_GIT_ALLOWED_ROOTS" in response.json()["detail"]
    for url in ("git://example.com/r.git", "ssh://git@example.com/r.git", "http://example.com/r.git",
                "https://127.0.0.1/r.git"):
        response = api_client.post("/v2/deployments", github_body(url), format="json")
        assert response.status_code == 400, url
    assert not Deployment.objects.exists()


@pytest.mark.parametrize("source", ["external_docker", "internal_docker"])
def test_image_sources_are_refused_naming_the_local_runner(api_client, deploy_settings, source):
    response = api_client.post("/v2/deployments", {
        "name": "img", "source": source, "source_config": {"resource_spec": {}},
        "source_revision_config": {"image_uri": "registry.example/agent@sha256:" + "b" * 64}, "secrets": []},
        format="json")
    assert response.status_code == 400 and "local runner" in response.json()["detail"]


def test_creates_answer_400_naming_the_runner_when_it_is_disabled(api_client, repo_url, settings):
    settings.DEPLOY_LOCAL_RUNNER_ENABLED = False
    response = api_client.post("/v2/deployments", github_body(repo_url), format="json")
    assert response.status_code == 400
    assert "local runner" in response.json()["detail"] and "DEPLOY_LOCAL_RUNNER_ENABLED" in response.json()["detail"]


def test_a_deployment_traces_into_a_project_named_after_it_in_its_workspace(api_client, repo_url, workspace):
    from tracing.models import TracingProject

    deployment = create(api_client, github_body(repo_url, name="traced-agent"))
    project = TracingProject.objects.get(workspace=workspace, name="traced-agent")
    stored = Deployment.objects.get(id=deployment["id"])
    assert stored.tracing_project_id == project.id
    assert stored.tracing_api_key.permissions == ["tracing:write"]


def test_listing_pages_with_limit_and_offset_and_filters(api_client, repo_url):
    for index in range(5):
        create(api_client, github_body(repo_url, name=f"agent-{index}"))
    first = api_client.get("/v2/deployments", {"limit": 2}).json()
    second = api_client.get("/v2/deployments", {"limit": 2, "offset": first["offset"]}).json()
    third = api_client.get("/v2/deployments", {"limit": 2, "offset": second["offset"]}).json()
    names = [d["name"] for page in (first, second, third) for d in page["resources"]]
    assert sorted(names) == [f"agent-{i}" for i in range(5)] and len(set(names)) == 5
    assert (first["offset"], second["offset"], third["offset"]) == (2, 4, 5)
    assert [d["name"] for d in api_client.get("/v2/deployments", {"name_contains": "NT-3"}).json()["resources"]] == \
        ["agent-3"]
    assert len(api_client.get("/v2/deployments", {"name_contains": ""}).json()["resources"]) == 5
    assert [d["name"] for d in api_client.get("/v2/deployments", {"name": "agent-1", "name_contains": "agent-1"})
            .json()["resources"]] == ["agent-1"]
    assert len(api_client.get("/v2/deployments", {"status": "AWAITING_DATABASE"}).json()["resources"]) == 5
    assert api_client.get("/v2/deployments", {"status": "READY"}).json()["resources"] == []
    assert len(api_client.get("/v2/deployments", {"deployment_type": "dev"}).json()["resources"]) == 5
    assert api_client.get("/v2/deployments", {"deployment_type": "prod"}).json()["resources"] == []


@pytest.mark.parametrize("params, loc", [
    ({"limit": 0}, ["query", "limit"]), ({"limit": 101}, ["query", "limit"]), ({"offset": -1}, ["query", "offset"]),
    ({"status": "NOPE"}, ["query", "status"]), ({"deployment_type": "huge"}, ["query", "deployment_type"]),
])
def test_bad_list_parameters_are_422(api_client, params, loc):
    response = api_client.get("/v2/deployments", params)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc


@pytest.mark.parametrize("body, loc, type_", [
    ({"source": "github"}, ["body", "name"], "missing"),
    ({"name": "x", "source": "ftp"}, ["body", "source"], "invalid_choice"),
    ({"name": "x", "source": "github", "secrets": [{"name": "A"}]}, ["body", "secrets", 0, "value"], "missing"),
    ({"name": "x", "source": "github", "source_config": {"deployment_type": "huge"}},
     ["body", "source_config", "deployment_type"], "invalid_choice"),
])
def test_schema_errors_are_422_http_validation_errors(api_client, deploy_settings, body, loc, type_):
    response = api_client.post("/v2/deployments", body, format="json")
    assert response.status_code == 422
    assert {"loc": loc, "type": type_} == {k: response.json()["detail"][0][k] for k in ("loc", "type")}
    assert isinstance(response.json()["detail"][0]["msg"], str)


def test_a_malformed_id_in_the_path_is_422(api_client):
    response = api_client.get("/v2/deployments/not-a-uuid")
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["path", "deployment_id"], "msg": "Input should be a valid UUID",
                                          "type": "uuid_parsing"}]


def test_a_missing_or_foreign_deployment_is_404_with_the_real_text(api_client, outsider_client, repo_url):
    deployment = create(api_client, github_body(repo_url))
    missing = str(uuid.uuid4())
    for client, deployment_id in ((api_client, missing), (outsider_client, deployment["id"])):
        base = f"/v2/deployments/{deployment_id}"
        calls = [client.get(base), client.patch(base, {}, format="json"), client.delete(base),
                 client.get(f"{base}/revisions"), client.post(f"{base}/upload-url", {}, format="json"),
                 client.post(f"/v1/projects/{deployment_id}/deploy_logs", {}, format="json")]
        for response in calls:
            assert response.status_code == 404
            assert response.json() == {"detail": f"Deployment ID {deployment_id} not found."}
    assert outsider_client.get("/v2/deployments").json()["resources"] == []
    assert Deployment.objects.get(id=deployment["id"]).status == "AWAITING_DATABASE"


def test_reading_needs_deployments_read_and_writing_needs_deployments_manage(make_client, workspace, repo_url):
    owner = make_client(workspace)
    reader = make_client(workspace, permissions=["deployments:read"])
    stranger = make_client(workspace, permissions=["chat:use"])
    deployment = create(owner, github_body(repo_url))
    base = f"/v2/deployments/{deployment['id']}"
    assert reader.get(base).status_code == 200 and reader.get("/v2/deployments").status_code == 200
    assert reader.patch(base, {"secrets": None}, format="json").status_code == 403
    assert reader.delete(base).status_code == 403
    assert reader.post("/v2/deployments", github_body(repo_url, name="n"), format="json").status_code == 403
    assert stranger.get(base).status_code == 403
    anonymous = owner.__class__()
    assert anonymous.get(base).status_code == 401


def test_delete_answers_204_then_the_teardown_removes_everything(api_client, repo_url, run_jobs):
    deployment = create(api_client, github_body(repo_url))
    tracing_key = Deployment.objects.get(id=deployment["id"]).tracing_api_key
    response = api_client.delete(f"/v2/deployments/{deployment['id']}")
    assert response.status_code == 204 and response.content == b""
    shown = api_client.get(f"/v2/deployments/{deployment['id']}").json()
    assert shown["status"] == "AWAITING_DELETE"
    assert Revision.objects.get(id=deployment["latest_revision_id"]).status == "SKIPPED"
    assert "deployments.teardown" in run_jobs()
    assert api_client.get(f"/v2/deployments/{deployment['id']}").status_code == 404
    assert not Revision.objects.filter(id=deployment["latest_revision_id"]).exists()
    tracing_key.refresh_from_db()
    assert tracing_key.revoked_at is not None


@pytest.mark.parametrize("secrets", [[None], [1], ["A=1"], [["A", "1"]], [{"name": "A", "value": "1"}, None]],
                         ids=["null", "int", "string", "list", "null-after-a-good-one"])
def test_a_secret_that_is_not_an_object_is_422_on_create_and_patch(api_client, repo_url, secrets):
    response = api_client.post("/v2/deployments", {**github_body(repo_url), "secrets": secrets}, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"] == ["body", "secrets", len(secrets) - 1]
    assert not Deployment.objects.exists()
    deployment = create(api_client, github_body(repo_url))
    response = api_client.patch(f"/v2/deployments/{deployment['id']}", {"secrets": secrets}, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"] == ["body", "secrets", len(secrets) - 1]
    stored = Deployment.objects.get(id=deployment["id"])
    assert stored.secret_names == ["OPENAI_API_KEY"] and Revision.objects.filter(deployment=stored).count() == 1


@pytest.mark.parametrize("secrets", [{"name": "A", "value": "1"}, "A=1", 5],
                         ids=["object", "string", "int"])
def test_secrets_that_are_not_a_list_are_422(api_client, repo_url, secrets):
    response = api_client.post("/v2/deployments", {**github_body(repo_url), "secrets": secrets}, format="json")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "secrets"]


@pytest.mark.parametrize("params, loc", [
    ({"offset": 2**63}, ["query", "offset"]), ({"offset": 2**64 + 1}, ["query", "offset"]),
    ({"offset": 10**30}, ["query", "offset"]), ({"offset": MAX_OFFSET + 1}, ["query", "offset"]),
    ({"limit": 2**63}, ["query", "limit"]), ({"offset": "9" * 5000}, ["query", "offset"]),
], ids=["2^63", "2^64+1", "10^30", "past-the-bound", "huge-limit", "5000-digits"])
def test_an_absurd_offset_or_limit_is_422_not_an_overflow(api_client, params, loc):
    response = api_client.get("/v2/deployments", params)
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"] == loc


def test_the_largest_offset_allowed_answers_an_empty_page(api_client):
    response = api_client.get("/v2/deployments", {"offset": MAX_OFFSET, "limit": 100})
    assert response.status_code == 200 and response.json() == {"resources": [], "offset": MAX_OFFSET}

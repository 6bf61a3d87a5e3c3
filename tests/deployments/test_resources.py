"""resource_spec through the API: ranges answer 422 in FastAPI's shape, what is valid is stored and reaches each new
revision, and the values a revision is served with follow LangSmith's defaults."""

from __future__ import annotations

import pytest

from deployments import resources
from deployments.models import Revision
from tests.deployments.support_projects import git_repo, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo_url(deploy_settings, tmp_path):
    return git_repo(make_project(tmp_path / "repos" / "agent"))


def body(repo_url, deployment_type="prod", resource_spec=None, name="sized"):
    return {"name": name, "source": "github",
            "source_config": {"repo_url": repo_url, "deployment_type": deployment_type,
                              "resource_spec": resource_spec},
            "source_revision_config": {"repo_ref": "main"}}


@pytest.mark.parametrize("spec, field, error_type", [
    ({"min_scale": 0}, "min_scale", "greater_than_equal"),
    ({"min_scale": 11}, "min_scale", "less_than_equal"),
    ({"max_scale": 1.5}, "max_scale", "int_from_float"),
    ({"min_scale": "2"}, "min_scale", "int_type"),
    ({"min_scale": True}, "min_scale", "int_type"),
    ({"min_scale": 3, "max_scale": 2}, "max_scale", "greater_than_equal"),
    ({"memory_mb": 64}, "memory_mb", "greater_than_equal"),
    ({"memory_limit_mb": 100000}, "memory_limit_mb", "less_than_equal"),
    ({"memory_mb": 1024, "memory_limit_mb": 512}, "memory_limit_mb", "greater_than_equal"),
    ({"cpu": 0.05}, "cpu", "greater_than_equal"),
    ({"cpu": 9}, "cpu", "less_than_equal"),
    ({"cpu_limit": 16.5}, "cpu_limit", "less_than_equal"),
    ({"queue_memory_mb": 0}, "queue_memory_mb", "greater_than_equal"),
    ({"labels": ["a"]}, "labels", "dict_type"),
    ({"sidecars": {}}, "sidecars", "list_type"),
])
def test_an_out_of_range_resource_spec_answers_422_naming_the_field(api_client, repo_url, spec, field, error_type):
    response = api_client.post("/v2/deployments", body(repo_url, resource_spec=spec), format="json")
    assert response.status_code == 422, response.content
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "source_config", "resource_spec", field] and error["type"] == error_type
    assert error["msg"].startswith("Input should be")


def test_a_resource_spec_that_is_not_an_object_answers_422(api_client, repo_url):
    response = api_client.post("/v2/deployments", body(repo_url, resource_spec=[1]), format="json")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source_config", "resource_spec"]


def test_a_dev_deployment_asking_for_more_than_one_replica_answers_422_on_create_and_on_patch(api_client, repo_url):
    response = api_client.post("/v2/deployments", body(repo_url, "dev", {"min_scale": 2}), format="json")
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "source_config", "resource_spec", "min_scale"]
    assert "one replica" in error["msg"] and error["type"] == "less_than_equal"

    created = api_client.post("/v2/deployments", body(repo_url, "dev_zero"), format="json").json()
    response = api_client.patch(f"/v2/deployments/{created['id']}",
                                {"source_config": {"resource_spec": {"max_scale": 3}}}, format="json")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "source_config", "resource_spec", "max_scale"]
    assert Revision.objects.filter(deployment_id=created["id"]).count() == 1


def test_a_valid_spec_is_stored_with_its_kubernetes_and_unknown_keys_and_reaches_every_new_revision(api_client,
                                                                                                     repo_url):
    spec = {"min_scale": 3, "max_scale": 5, "memory_mb": 512, "cpu": 0.5, "labels": {"team": "a"},
            "volumes": [], "not_a_langsmith_field": 1, "memory_limit_mb": None}
    created = api_client.post("/v2/deployments", body(repo_url, "prod", spec), format="json")
    assert created.status_code == 201, created.content
    deployment = created.json()
    assert deployment["source_config"]["resource_spec"] == spec
    assert Revision.objects.get(id=deployment["latest_revision_id"]).resource_spec == spec
    # A PATCH that does not touch resource_spec makes a revision with the deployment's spec.
    patched = api_client.patch(f"/v2/deployments/{deployment['id']}", {"secrets": [{"name": "A", "value": "1"}]},
                               format="json").json()
    assert Revision.objects.get(id=patched["latest_revision_id"]).resource_spec == spec
    # One that does replaces it.
    patched = api_client.patch(f"/v2/deployments/{deployment['id']}",
                               {"source_config": {"resource_spec": {"min_scale": 1}}}, format="json").json()
    assert patched["source_config"]["resource_spec"] == {"min_scale": 1}
    assert Revision.objects.get(id=patched["latest_revision_id"]).resource_spec == {"min_scale": 1}


@pytest.mark.parametrize("spec, deployment_type, replicas, memory", [
    (None, "prod", 2, None),
    (None, "dev", 1, None),
    (None, None, 1, None),
    ({}, "dev_free", 1, None),
    ({"min_scale": 4}, "prod", 4, None),
    ({"max_scale": 1}, "prod", 1, None),
    ({"max_scale": 6}, "prod", 2, None),
    ({"memory_mb": 512}, "prod", 2, 1024),
    ({"memory_mb": 512, "memory_limit_mb": 768}, "dev", 1, 768),
    # Stored by an older version, before the API refused it: served as the API would have allowed.
    ({"min_scale": 5, "memory_mb": "lots"}, "dev", 1, None),
])
def test_a_revision_runs_min_scale_processes_or_its_types_default_with_a_limit_of_twice_its_memory(
        spec, deployment_type, replicas, memory):
    wanted = resources.effective(spec, deployment_type)
    assert (wanted.replicas, wanted.memory_limit_mb) == (replicas, memory)


def test_every_field_the_local_runner_does_not_apply_gets_a_deploy_log_line(api_client, repo_url):
    from deployments.processes import LineSink
    from deployments.runners import StepContext
    from deployments.runners.resource_log import log_resources

    # Every field LangSmith documents, at its lowest value, and one it does not.
    spec = {field: low for field, (_, low, _) in resources.NUMBER_FIELDS.items()}
    spec.update({"labels": {}, "annotations": {"a": "b"}, "service_account_name": "agent", "image_pull_secrets": [],
                 "volumes": [], "volume_mounts": [], "init_containers": [], "sidecars": [], "not_langsmiths": 1})
    deployment = api_client.post("/v2/deployments", body(repo_url, "prod", spec), format="json").json()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    lines: list[tuple[str, str]] = []
    log_resources(StepContext(revision, LineSink(lines.extend), lambda: None), revision,
                   resources.revision_resources(revision))
    messages = [message for _, message in lines]
    assert messages[0] == ("Resources: 1 serving process (min_scale), a memory limit of 128 MiB on each "
                           "(memory_limit_mb).")
    not_applied = {message.split(" ")[0].removeprefix("resource_spec.") for message in messages[1:]}
    assert not_applied == set(spec) - {"min_scale", "memory_limit_mb"}
    assert all(level == "WARNING" and "is not applied: " in message for level, message in lines[1:])
    assert "resource_spec.not_langsmiths (1) is not applied: it is not a field of LangSmith's ResourceSpec." in messages

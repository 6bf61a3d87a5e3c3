"""The deployment proxy's refusals, in the REST shape, before any request reaches a tenant's process."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from accounts.services import api_key_create
from deployments.models import Deployment, Revision
from tests.support_processes import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def empty_deployment(api_client, deploy_settings):
    response = api_client.post("/v2/deployments", {"name": "proxied", "source": "internal_source",
                                                   "source_config": {}, "source_revision_config": {}}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def key_client(workspace, permissions=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(workspaces=[workspace], permissions=permissions)[1])
    return client


def test_a_call_without_a_key_is_401(empty_deployment):
    response = APIClient().get(f"/deployments/{empty_deployment['id']}/api/threads")
    assert response.status_code == 401
    assert response.content == b'{"detail": "Missing API key: send it in the X-Api-Key header."}'


def test_a_browser_opening_a_deployments_docs_without_a_key_is_told_where_the_page_needs_none(empty_deployment):
    response = APIClient().get(f"/deployments/{empty_deployment['id']}/docs", HTTP_ACCEPT="text/html")
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert detail.startswith("Missing API key: send it in the X-Api-Key header.")
    assert "/api/docs" in detail and "curl -H 'X-Api-Key: <key>'" in detail
    # The page itself still needs the key: nothing of the deployment is served without it.
    assert "/api/docs" not in APIClient().get(f"/deployments/{empty_deployment['id']}/openapi.json").json()["detail"]


def test_a_key_without_chat_use_is_403(empty_deployment, workspace):
    response = key_client(workspace, ["deployments:read"]).get(f"/deployments/{empty_deployment['id']}/api/threads")
    assert response.status_code == 403
    assert response.json() == {"detail": "This API key lacks the 'chat:use' permission."}


def test_another_workspaces_deployment_is_404_and_a_malformed_id_is_422(empty_deployment, other_workspace):
    outsider = key_client(other_workspace, ["chat:use"])
    missing = outsider.get(f"/deployments/{empty_deployment['id']}/api/threads")
    assert missing.status_code == 404 and set(missing.json()) == {"detail"}
    malformed = outsider.get("/deployments/not-a-uuid/api/threads")
    assert malformed.status_code == 422
    assert malformed.json()["detail"][0]["loc"] == ["path", "deployment_id"]


def test_a_deployment_with_nothing_deployed_yet_is_503(empty_deployment, workspace):
    response = key_client(workspace, ["chat:use"]).get(f"/deployments/{empty_deployment['id']}/api/threads")
    assert response.status_code == 503
    assert response.json() == {"detail": f"Deployment ID {empty_deployment['id']} has no revision deployed yet."}


def test_an_unknown_deployment_id_is_404(workspace):
    response = key_client(workspace, ["chat:use"]).get(f"/deployments/{uuid.uuid4()}/api/threads")
    assert response.status_code == 404


def test_a_revision_whose_server_does_not_accept_connections_yet_is_503_starting_with_retry_after(empty_deployment,
                                                                                                   workspace):
    deployment = Deployment.objects.get(id=empty_deployment["id"])
    revision = Revision.objects.create(deployment=deployment, number=99, source=deployment.source, status="DEPLOYED",
                                       serving_replicas=[{"port": free_port(), "pid": 0}], serving_token="token")
    Deployment.objects.filter(id=deployment.id).update(active_revision=revision)
    response = key_client(workspace, ["chat:use"]).get(f"/deployments/{deployment.id}/api/threads")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert response.json()["detail"].startswith(f"Deployment {deployment.id} is starting:")

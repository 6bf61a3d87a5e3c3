"""The admin shows deployments and revisions with status and logs, and redeploys and interrupts through services;
the status link `langgraph deploy` prints opens a deployment's admin page."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from deployments import services
from deployments.models import Deployment, Revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "", "pw-for-tests"))
    return client


def test_the_admin_shows_status_logs_and_never_secret_values(admin_client, internal_deployment):
    deployment = internal_deployment(secrets=[{"name": "API_TOKEN", "value": "very-secret-value"}])
    pages = [admin_client.get("/admin/deployments/deployment/"),
             admin_client.get(f"/admin/deployments/deployment/{deployment['id']}/change/"),
             admin_client.get("/admin/deployments/revision/"),
             admin_client.get(f"/admin/deployments/revision/{deployment['latest_revision_id']}/change/")]
    assert all(page.status_code == 200 for page in pages)
    assert b"QUEUED" in pages[0].content or b"QUEUED" in pages[2].content
    assert b"Revision #1 created." in pages[3].content and b"API_TOKEN" in pages[1].content
    assert not any(b"very-secret-value" in page.content for page in pages)


def test_the_admin_interrupts_and_redeploys_revisions(admin_client, internal_deployment):
    deployment = internal_deployment()
    revision_id = deployment["latest_revision_id"]
    response = admin_client.post("/admin/deployments/revision/", {"action": "interrupt",
                                                                  "_selected_action": [revision_id]})
    assert response.status_code == 302 and Revision.objects.get(id=revision_id).status == "INTERRUPTED"
    admin_client.post("/admin/deployments/revision/", {"action": "redeploy", "_selected_action": [revision_id]})
    latest = Deployment.objects.get(id=deployment["id"]).latest_revision
    assert latest.id != revision_id and latest.number == 2 and latest.status == "QUEUED"
    admin_client.post("/admin/deployments/deployment/", {"action": "delete_deployments",
                                                         "_selected_action": [deployment["id"]]})
    assert Deployment.objects.get(id=deployment["id"]).status == "AWAITING_DELETE"


def deployed(revision_id) -> None:
    """Walk a revision through the statuses the pipeline gives it, and make it the one served."""
    revision = Revision.objects.get(id=revision_id)
    for status in ("AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING"):
        assert services.revision_transition(revision=revision, to=status)
    services.revision_activate(revision=revision)


def test_a_replaced_revision_stays_deployed_in_the_api_and_says_replaced_in_the_admin(admin_client, api_client,
                                                                                       internal_deployment):
    deployment = internal_deployment()
    first = deployment["latest_revision_id"]
    deployed(first)
    second = api_client.post(f"/v2/deployments/{deployment['id']}/revisions", {}, format="json").json()["id"]
    deployed(second)
    # As on LangSmith: the API keeps DEPLOYED (langgraph-cli relabels older ones REPLACED on its own side).
    base = f"/v2/deployments/{deployment['id']}"
    assert [(r["id"], r["status"]) for r in api_client.get(f"{base}/revisions").json()["resources"]] == [
        (second, "DEPLOYED"), (first, "DEPLOYED")]
    assert api_client.get(f"{base}/revisions/{first}").json()["status_message"] is None
    assert api_client.get(base).json()["active_revision_id"] == second
    page = admin_client.get(f"/admin/deployments/revision/{first}/change/").content.decode()
    assert "Replaced" in page and "a newer revision replaced it" in page
    assert "Serving" in admin_client.get(f"/admin/deployments/revision/{second}/change/").content.decode()


@pytest.fixture
def cli_deployment(api_client, deploy_settings):
    """A deployment as `langgraph deploy` creates it (no revision yet), and the status link it prints."""
    response = api_client.post("/v2/deployments", {"name": "cli-agent", "source": "internal_source"}, format="json")
    assert response.status_code == 201, response.content
    deployment = response.json()
    return deployment, f"/o/{deployment['tenant_id']}/host/deployments/{deployment['id']}"


def test_the_status_link_sends_a_visitor_who_is_not_logged_in_to_the_admin_login_and_back(cli_deployment):
    _, link = cli_deployment
    response = Client().get(link)
    assert response.status_code == 302 and response["Location"] == f"/admin/login/?next={link}"
    # Nothing is looked up for a stranger: an unknown deployment gets the same answer.
    unknown = f"/o/{uuid.uuid4()}/host/deployments/{uuid.uuid4()}"
    assert Client().get(unknown)["Location"] == f"/admin/login/?next={unknown}"


def test_the_status_link_sends_a_logged_in_user_who_is_not_staff_to_the_admin_login(cli_deployment):
    _, link = cli_deployment
    client = Client()
    client.force_login(get_user_model().objects.create_user("chat-user", "", "pw-for-tests"))
    response = client.get(link)
    assert response.status_code == 302 and response["Location"] == f"/admin/login/?next={link}"


def test_the_status_link_opens_the_deployments_admin_page_for_staff(admin_client, cli_deployment):
    deployment, link = cli_deployment
    response = admin_client.get(link, follow=True)
    assert response.redirect_chain == [(f"/admin/deployments/deployment/{deployment['id']}/change/", 302)]
    assert response.status_code == 200 and b"cli-agent" in response.content


def test_the_status_link_of_an_unknown_deployment_or_of_another_workspace_is_not_found(admin_client, cli_deployment,
                                                                                        other_workspace):
    deployment, _ = cli_deployment
    assert admin_client.get(f"/o/{other_workspace.id}/host/deployments/{deployment['id']}").status_code == 404
    assert admin_client.get(f"/o/{deployment['tenant_id']}/host/deployments/{uuid.uuid4()}").status_code == 404
    assert admin_client.get(f"/o/{deployment['tenant_id']}/host/deployments/not-an-id").status_code == 404

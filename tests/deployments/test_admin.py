"""The admin shows deployments and revisions with status and logs, and redeploys and interrupts through services."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

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

"""The workspaces API: list, create, get and the current workspace of a key."""

from __future__ import annotations

import pytest

from accounts.models import ApiKey

pytestmark = pytest.mark.django_db


def test_a_created_workspace_is_usable_by_the_key_that_created_it_and_by_no_other(api_client, outsider_client):
    response = api_client.post("/api/v1/workspaces", {"name": "team b"}, format="json")
    assert response.status_code == 201
    created = response.json()
    assert set(created) == {"id", "name", "created_at"} and created["name"] == "team b"
    assert api_client.get(f"/api/v1/workspaces/{created['id']}").json() == created
    assert "team b" in [w["name"] for w in api_client.get("/api/v1/workspaces").json()]
    assert outsider_client.get(f"/api/v1/workspaces/{created['id']}").status_code == 404


def test_a_name_already_taken_is_409_and_grants_the_key_nothing(api_client, other_workspace):
    response = api_client.post("/api/v1/workspaces", {"name": other_workspace.name}, format="json")
    assert response.status_code == 409
    key = ApiKey.objects.get(prefix=api_client.raw_key.split("_")[1])
    assert list(key.workspaces.values_list("name", flat=True)) == ["owner-workspace"]


def test_the_current_workspace_is_the_one_the_tenant_header_names(api_client, workspace):
    assert api_client.get("/api/v1/workspaces/current").json()["id"] == str(workspace.id)


def test_creating_a_workspace_leaves_where_the_keys_calls_without_a_tenant_go(make_client, workspace):
    client = make_client(workspace, tenant=False)
    created = client.post("/api/v1/workspaces", {"name": "team c"}, format="json").json()
    assert client.get("/api/v1/workspaces/current").json()["id"] == str(workspace.id)
    assert client.get("/api/v1/bulk-exports/destinations").status_code == 200
    client.credentials(HTTP_X_API_KEY=client.raw_key, HTTP_X_TENANT_ID=created["id"])
    assert client.get("/api/v1/workspaces/current").json()["id"] == created["id"]


def test_a_key_made_for_several_workspaces_still_names_one_on_every_call(make_client, workspace, other_workspace):
    client = make_client(workspace, tenant=False, workspaces=[workspace, other_workspace])
    assert client.get("/api/v1/workspaces/current").status_code == 403

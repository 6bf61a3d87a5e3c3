"""X-Api-Key and X-Tenant-Id: who may call, and in which workspace."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.authentication import AMBIGUOUS_WORKSPACE
from accounts.models import ApiKey, Workspace
from accounts.permissions import ALL_PERMISSIONS, effective_permissions
from accounts.selectors import api_key_authenticate
from accounts.services import api_key_create, api_key_revoke, workspace_create

pytestmark = pytest.mark.django_db


def client_with(**headers) -> APIClient:
    client = APIClient()
    client.credentials(**headers)
    return client


def test_header_names_are_case_insensitive(api_client, workspace, live_server_process):
    import httpx

    response = httpx.get(f"{live_server_process.url}/api/v1/workspaces",
                         headers={"x-api-key": api_client.raw_key, "X-TENANT-ID": str(workspace.id)})
    assert response.status_code == 200
    assert [w["name"] for w in response.json()] == [workspace.name]


def test_an_unknown_key_is_401(db):
    response = client_with(HTTP_X_API_KEY="lgk_000000000000_nope").get("/api/v1/workspaces")
    assert response.status_code == 401


def test_a_revoked_key_is_401(api_client):
    api_key_revoke(api_key=ApiKey.objects.get())
    assert api_client.get("/api/v1/workspaces").status_code == 401


def test_an_expired_key_is_401(workspace):
    _, raw = api_key_create(workspaces=[workspace], expires_at=timezone.now() - timedelta(seconds=1))
    assert client_with(HTTP_X_API_KEY=raw).get("/api/v1/workspaces").status_code == 401


def test_a_key_for_another_workspace_is_403(api_client, other_workspace):
    api_client.credentials(HTTP_X_API_KEY=api_client.raw_key, HTTP_X_TENANT_ID=str(other_workspace.id))
    assert api_client.get("/api/v1/workspaces").status_code == 403


def test_a_single_workspace_key_may_omit_the_tenant(make_client, workspace):
    client = make_client(workspace, tenant=False)
    response = client.get("/api/v1/workspaces/current")
    assert response.status_code == 200 and response.json()["id"] == str(workspace.id)


def test_a_multi_workspace_key_without_tenant_is_403_requiring_workspace_specification(
    make_client, workspace, other_workspace
):
    client = make_client(workspace, tenant=False, workspaces=[workspace, other_workspace])
    response = client.get("/api/v1/workspaces/current")
    assert response.status_code == 403
    assert "requires workspace specification" in response.json()["detail"]
    assert "requires workspace specification" in AMBIGUOUS_WORKSPACE


def test_keys_are_stored_as_prefix_and_hash_only(workspace):
    api_key, raw = api_key_create(workspaces=[workspace])
    stored = ApiKey.objects.filter(pk=api_key.pk).values().get()
    assert raw not in str(stored)
    assert raw.split("_", 2)[2] not in str(stored)
    assert len(stored["hashed_key"]) == 128


def test_workspaces_manage_grants_everything_and_manage_implies_read():
    assert effective_permissions(["workspaces:manage"]) == frozenset(ALL_PERMISSIONS)
    assert effective_permissions(["bulk-exports:manage"]) == {"bulk-exports:manage", "bulk-exports:read"}
    assert "deployments:manage" not in effective_permissions(["deployments:read"])


def test_a_key_and_its_workspaces_are_read_in_one_query_with_the_values_the_orm_reads(
        workspace, django_assert_num_queries):
    later = workspace_create(name="b-later")
    earlier = workspace_create(name="a-earlier")
    expires = timezone.now() + timedelta(days=3)
    created, raw = api_key_create(workspaces=[later, workspace, earlier], permissions=["tracing:read"], name="k",
                                  expires_at=expires)
    with django_assert_num_queries(1):
        api_key = api_key_authenticate(raw_key=raw)
        workspaces = list(api_key.workspaces.all())
    stored = ApiKey.objects.get(pk=created.pk)
    fields = [field.attname for field in ApiKey._meta.concrete_fields]
    assert [getattr(api_key, name) for name in fields] == [getattr(stored, name) for name in fields]
    assert api_key.permissions == ["tracing:read"] and api_key.expires_at == expires
    assert workspaces == list(stored.workspaces.all()) == sorted([later, workspace, earlier], key=lambda w: w.name)
    assert [(w.id, w.name, w.created_at) for w in workspaces] == [
        (w.id, w.name, w.created_at) for w in Workspace.objects.filter(api_keys=stored)]
    assert not api_key._state.adding and api_key.workspaces.filter(id=later.id).exists()


def test_a_key_left_without_workspaces_authenticates_with_none(workspace):
    api_key, raw = api_key_create(workspaces=[workspace])
    api_key.workspaces.clear()
    found = api_key_authenticate(raw_key=raw)
    assert found == api_key and list(found.workspaces.all()) == []
    assert api_key_authenticate(raw_key=raw[:-1] + ("x" if raw[-1] != "x" else "y")) is None

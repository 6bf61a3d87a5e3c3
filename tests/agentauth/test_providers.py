"""OAuth providers: CRUD, a write-only encrypted client secret, the egress guard on their URLs, isolation."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from agentauth.models import OAuthProvider
from core.egress import use_resolver

pytestmark = pytest.mark.django_db

SECRET = "canary-provider-secret-5f1c9a7e2b"
PUBLIC_ADDRESS = "93.184.215.14"
RESPONSE_FIELDS = {"id", "organization_id", "provider_id", "name", "client_id", "auth_url", "token_url", "uses_pkce",
                   "code_challenge_method", "created_at", "updated_at"}


def provider_body(**overrides):
    return {"provider_id": "github", "name": "GitHub", "client_id": "abc", "client_secret": SECRET,
            "auth_url": "https://idp.example.com/authorize", "token_url": "https://idp.example.com/token",
            **overrides}


@pytest.fixture(autouse=True)
def public_dns():
    """idp.example.com resolves to a public address (nothing connects to it in these tests)."""
    def resolver(host):
        if host.endswith("example.com"):
            return [PUBLIC_ADDRESS]
        if host == "internal.example.net":
            return ["10.1.2.3"]
        if host == "mixed.example.net":
            return [PUBLIC_ADDRESS, "169.254.169.254"]
        raise OSError("no such host")

    with use_resolver(resolver):
        yield


def test_creating_a_provider_answers_it_without_the_client_secret(api_client, workspace):
    response = api_client.post("/v2/auth/providers", provider_body(), format="json")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == RESPONSE_FIELDS
    assert body["provider_id"] == "github" and body["organization_id"] == str(workspace.id)
    assert body["uses_pkce"] is False and body["code_challenge_method"] == "S256"
    assert SECRET not in response.content.decode()


def test_the_client_secret_is_encrypted_at_rest(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_secret FROM agentauth_oauthprovider")
        [(stored,)] = cursor.fetchall()
    assert SECRET not in stored and stored
    assert OAuthProvider.objects.get().client_secret == SECRET


def test_list_get_patch_and_delete_never_show_the_secret(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    listed = api_client.get("/v2/auth/providers")
    got = api_client.get("/v2/auth/providers/github")
    patched = api_client.patch("/v2/auth/providers/github", {"name": "GitHub Enterprise"}, format="json")
    assert [p["provider_id"] for p in listed.json()] == ["github"]
    assert got.json()["name"] == "GitHub" and patched.json()["name"] == "GitHub Enterprise"
    for response in (listed, got, patched):
        assert response.status_code == 200 and SECRET not in response.content.decode()
    deleted = api_client.delete("/v2/auth/providers/github")
    assert deleted.status_code == 200 and deleted.json() == {}
    assert api_client.get("/v2/auth/providers/github").status_code == 404


def test_patch_without_client_secret_keeps_it_and_with_one_replaces_it(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    api_client.patch("/v2/auth/providers/github", {"client_id": "new-id"}, format="json")
    assert OAuthProvider.objects.get().client_secret == SECRET
    api_client.patch("/v2/auth/providers/github", {"client_secret": "rotated-secret"}, format="json")
    provider = OAuthProvider.objects.get()
    assert provider.client_secret == "rotated-secret" and provider.client_id == "new-id"


def test_the_provider_id_cannot_be_changed_by_patch(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    response = api_client.patch("/v2/auth/providers/github", {"provider_id": "other", "id": "x"}, format="json")
    assert response.status_code == 200 and response.json()["provider_id"] == "github"


def test_a_duplicate_provider_id_is_409(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    response = api_client.post("/v2/auth/providers", provider_body(), format="json")
    assert response.status_code == 409
    assert response.json() == {"detail": "OAuth provider github already exists."}


@pytest.mark.parametrize("overrides, loc", [
    ({"provider_id": "has space"}, ["body", "provider_id"]),
    ({"provider_id": "a/b"}, ["body", "provider_id"]),
    ({"code_challenge_method": "plain"}, ["body", "code_challenge_method"]),
    ({"auth_url": "not a url"}, ["body", "auth_url"]),
    ({"token_url": None}, ["body", "token_url"]),
    ({"uses_pkce": "maybe"}, ["body", "uses_pkce"]),
    ({"client_secret": "", "uses_pkce": False}, ["body", "uses_pkce"]),
])
def test_invalid_provider_bodies_are_422_located_at_the_field(api_client, overrides, loc):
    response = api_client.post("/v2/auth/providers", provider_body(**overrides), format="json")
    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["detail"]] == [loc]
    assert SECRET not in response.content.decode()
    assert not OAuthProvider.objects.exists()


def test_a_missing_field_is_reported_as_missing(api_client):
    body = provider_body()
    del body["client_secret"]
    response = api_client.post("/v2/auth/providers", body, format="json")
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["body", "client_secret"], "msg": "This field is required.",
                                          "type": "missing"}]


def test_a_public_client_with_pkce_needs_no_secret(api_client):
    response = api_client.post("/v2/auth/providers", provider_body(client_secret="", uses_pkce=True), format="json")
    assert response.status_code == 200


@pytest.mark.parametrize("url", [
    "http://10.0.0.1/token",
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/token",
    "http://[::1]/token",
    "https://127.0.0.2/token",
    "https://internal.example.net/token",
    "https://mixed.example.net/token",
    "https://metadata.google.internal/token",
    "https://user:pass@idp.example.com/token",
    "ftp://idp.example.com/token",
    "https://nowhere.invalid/token",
])
def test_a_private_or_otherwise_forbidden_token_url_is_refused(api_client, url):
    response = api_client.post("/v2/auth/providers", provider_body(token_url=url), format="json")
    assert response.status_code in (400, 422)
    assert set(response.json()) == {"detail"}
    assert not OAuthProvider.objects.exists()


def test_a_private_auth_url_is_refused_too(api_client):
    response = api_client.post("/v2/auth/providers", provider_body(auth_url="http://192.168.1.1/authorize"),
                               format="json")
    assert response.status_code == 400
    assert "192.168.1.1" in response.json()["detail"]


def test_patching_in_a_private_token_url_is_refused_and_changes_nothing(api_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    response = api_client.patch("/v2/auth/providers/github", {"token_url": "http://10.0.0.1/token", "name": "x"},
                                format="json")
    assert response.status_code == 400
    provider = OAuthProvider.objects.get()
    assert provider.token_url == "https://idp.example.com/token" and provider.name == "GitHub"


def test_plain_http_is_refused_without_debug_unless_the_host_is_allowlisted(api_client, settings):
    settings.DEBUG = False
    refused = api_client.post("/v2/auth/providers", provider_body(token_url="http://idp.example.com/token"),
                              format="json")
    assert refused.status_code == 400 and "https" in refused.json()["detail"]
    settings.EGRESS_ALLOWLIST = ["idp.example.com"]
    allowed = api_client.post("/v2/auth/providers", provider_body(token_url="http://idp.example.com/token"),
                              format="json")
    assert allowed.status_code == 200


def test_plain_http_to_a_public_host_is_accepted_in_debug(api_client, settings):
    settings.DEBUG = True
    response = api_client.post("/v2/auth/providers", provider_body(auth_url="http://idp.example.com/authorize"),
                               format="json")
    assert response.status_code == 200


def test_another_workspaces_provider_is_404_like_a_missing_one(api_client, outsider_client):
    api_client.post("/v2/auth/providers", provider_body(), format="json")
    assert outsider_client.get("/v2/auth/providers").json() == []
    for method in ("get", "patch", "delete"):
        other = getattr(outsider_client, method)("/v2/auth/providers/github", {}, format="json")
        missing = getattr(outsider_client, method)("/v2/auth/providers/nothing", {}, format="json")
        assert other.status_code == missing.status_code == 404
        assert other.json() == {"detail": "OAuth provider github not found."}
    assert OAuthProvider.objects.get().name == "GitHub"


def test_two_workspaces_may_use_the_same_provider_id(api_client, outsider_client):
    assert api_client.post("/v2/auth/providers", provider_body(), format="json").status_code == 200
    assert outsider_client.post("/v2/auth/providers", provider_body(name="Theirs"), format="json").status_code == 200
    assert api_client.get("/v2/auth/providers/github").json()["name"] == "GitHub"
    assert outsider_client.get("/v2/auth/providers/github").json()["name"] == "Theirs"


@pytest.mark.parametrize("method, path", [
    ("get", "/v2/auth/providers"), ("post", "/v2/auth/providers"), ("get", "/v2/auth/providers/github"),
    ("patch", "/v2/auth/providers/github"), ("delete", "/v2/auth/providers/github"),
    ("post", "/v2/auth/authenticate"), ("get", "/v2/auth/wait/5d0c7bde-7d0c-4a55-a3a1-6c2b2b0c3b1e"),
    ("delete", "/v2/auth/tokens?user_id=u&provider=github"),
])
def test_every_api_endpoint_needs_a_key_with_auth_manage(make_client, workspace, method, path):
    without_permission = make_client(workspace, permissions=["deployments:manage"])
    response = getattr(without_permission, method)(path, {}, format="json")
    assert response.status_code == 403 and "auth:manage" in response.json()["detail"]
    anonymous = getattr(APIClient(), method)(path, {}, format="json")
    assert anonymous.status_code == 401


def test_an_unsupported_method_is_405(api_client):
    assert api_client.put("/v2/auth/providers", {}, format="json").status_code == 405
    assert api_client.get("/v2/auth/tokens").status_code == 405

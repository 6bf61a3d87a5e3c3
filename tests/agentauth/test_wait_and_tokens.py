"""wait (the long poll), token refresh, revocation and housekeeping, against the real authorization server."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agentauth.models import AuthFlow, OAuthToken
from tests.agentauth.support_oauth_server import ACCESS_TOKEN_PREFIX

pytestmark = pytest.mark.django_db


# --- wait -------------------------------------------------------------------------------------


def test_wait_with_timeout_zero_answers_pending_at_once_and_with_a_timeout_answers_timeout(flows, api_client):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 0}).json() == {"status": "pending", "token": None}
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 1}).json() == {"status": "timeout", "token": None}


def test_wait_accepts_timeouts_above_300_and_caps_them(flows, browser, api_client):
    flows.provider()
    auth_id = flows.complete(browser)
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 3600}).json()["status"] == "completed"


@pytest.mark.parametrize("timeout", ["-1", "soon", "1.5"])
def test_wait_with_an_invalid_timeout_is_422(api_client, timeout):
    response = api_client.get(f"/v2/auth/wait/{uuid.uuid4()}", {"timeout": timeout})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "timeout"]


# Fixed ids: pytest-xdist needs the same test ids in every process.
@pytest.mark.parametrize("auth_id", ["5d7e9a1c-3b2f-4e6d-8c0a-9f1e2d3c4b5a", "not-a-uuid"])
def test_wait_for_an_unknown_auth_id_is_not_found(api_client, auth_id):
    assert api_client.get(f"/v2/auth/wait/{auth_id}").json() == {"status": "not_found", "token": None}


def test_wait_on_an_expired_flow_is_not_found(flows, api_client):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    AuthFlow.objects.filter(pk=auth_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 5}).json()["status"] == "not_found"


def test_another_workspaces_auth_id_is_not_found_and_its_provider_is_unknown(flows, browser, outsider_client):
    flows.provider()
    auth_id = flows.complete(browser)
    assert outsider_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 0}).json() == {"status": "not_found",
                                                                                     "token": None}
    response = outsider_client.post("/v2/auth/authenticate", {"user_id": "user-1", "provider": "acme",
                                                              "scopes": ["read"]}, format="json")
    assert response.status_code == 404
    revoke = outsider_client.delete("/v2/auth/tokens?user_id=user-1&provider=acme")
    assert revoke.status_code == 404 and OAuthToken.objects.count() == 1


# --- refresh and revocation ---------------------------------------------------------------------


def expire_stored_token():
    OAuthToken.objects.update(expires_at=timezone.now() - timedelta(minutes=1))


def test_an_expired_token_is_refreshed_by_authenticate(flows, browser, oauth_server):
    flows.provider()
    flows.complete(browser)
    first = oauth_server.tokens[-1]
    expire_stored_token()
    body = flows.authenticate()
    assert body["status"] == "completed" and body["token"].startswith(ACCESS_TOKEN_PREFIX)
    assert body["token"] != first.access_token
    assert oauth_server.token_request_count("refresh_token") == 1
    token = OAuthToken.objects.get()
    assert token.refresh_token == oauth_server.tokens[-1].refresh_token != first.refresh_token  # rotated
    assert token.expires_at > timezone.now() and token.refresh_lease_until is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token FROM agentauth_oauthtoken")
        [(access, refresh)] = cursor.fetchall()
    assert body["token"] not in access and token.refresh_token not in refresh  # still encrypted after the UPDATE
    assert flows.authenticate()["token"] == body["token"]
    assert oauth_server.token_request_count("refresh_token") == 1


def test_a_refresh_token_the_provider_no_longer_accepts_is_dropped_and_the_user_asked_again(
        flows, browser, oauth_server):
    flows.provider()
    flows.complete(browser)
    for issued in oauth_server.tokens:
        issued.revoked = True
    expire_stored_token()
    assert flows.authenticate()["status"] == "pending"
    assert not OAuthToken.objects.exists()


def test_a_provider_that_fails_during_refresh_is_a_502_and_keeps_the_token(flows, browser, oauth_server, api_client):
    flows.provider()
    flows.complete(browser)
    expire_stored_token()
    oauth_server.token_mode = "error500"
    response = api_client.post("/v2/auth/authenticate", {"user_id": "user-1", "provider": "acme",
                                                         "scopes": ["read"]}, format="json")
    assert response.status_code == 502 and set(response.json()) == {"detail"}
    token = OAuthToken.objects.get()
    assert token.refresh_token and token.refresh_lease_until is None


def test_an_expired_token_without_a_refresh_token_asks_the_user_again(flows, browser):
    flows.provider()
    flows.complete(browser)
    OAuthToken.objects.update(refresh_token="")
    expire_stored_token()
    assert flows.authenticate()["status"] == "pending"


def test_revocation_deletes_the_users_tokens_across_agents(flows, browser, api_client):
    flows.provider()
    flows.complete(browser, user_id="alice", agent_id="a1")
    flows.complete(browser, user_id="alice", agent_id="a2")
    flows.complete(browser, user_id="bob")
    response = api_client.delete("/v2/auth/tokens?user_id=alice&provider=acme")
    assert response.status_code == 200 and response.json() == {"deleted": 2}
    assert list(OAuthToken.objects.values_list("user_id", flat=True)) == ["bob"]
    assert flows.authenticate(user_id="alice", agent_id="a1")["status"] == "pending"


def test_wait_after_revocation_no_longer_hands_out_the_token(flows, browser, api_client):
    flows.provider()
    auth_id = flows.complete(browser)
    api_client.delete("/v2/auth/tokens?user_id=user-1&provider=acme")
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 0}).json()["status"] == "not_found"


@pytest.mark.parametrize("query, loc", [("provider=acme", ["query", "user_id"]), ("user_id=u", ["query", "provider"])])
def test_revocation_needs_user_id_and_provider(api_client, query, loc):
    response = api_client.delete(f"/v2/auth/tokens?{query}")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc


def test_deleting_a_provider_deletes_its_flows_and_tokens(flows, browser, api_client):
    flows.provider()
    flows.complete(browser)
    api_client.delete("/v2/auth/providers/acme")
    assert not OAuthToken.objects.exists() and not AuthFlow.objects.exists()


def test_old_flows_are_purged(flows):
    from agentauth.services import flows_purge

    flows.provider()
    old = flows.authenticate()["auth_id"]
    fresh = flows.authenticate()["auth_id"]
    AuthFlow.objects.filter(pk=old).update(expires_at=timezone.now() - timedelta(days=2))
    assert flows_purge() == 1
    assert list(AuthFlow.objects.values_list("id", flat=True)) == [uuid.UUID(fresh)]


@pytest.mark.django_db(transaction=True)
def test_a_token_another_request_is_refreshing_is_awaited_not_refreshed_twice(flows, browser, oauth_server):
    flows.provider()
    flows.complete(browser)
    expire_stored_token()
    OAuthToken.objects.update(refresh_lease_until=timezone.now() + timedelta(minutes=1))

    def the_other_request_finishes():
        time.sleep(0.5)
        OAuthToken.objects.update(access_token="refreshed-elsewhere", refresh_lease_until=None,
                                  expires_at=timezone.now() + timedelta(hours=1))
        connection.close()

    other = threading.Thread(target=the_other_request_finishes)
    other.start()
    body = flows.authenticate()
    other.join()
    assert body["status"] == "completed" and body["token"] == "refreshed-elsewhere"
    assert oauth_server.token_request_count("refresh_token") == 0


def test_a_token_that_cannot_be_decrypted_is_a_clear_503_not_a_500(flows, browser, api_client):
    flows.provider()
    auth_id = flows.complete(browser)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE agentauth_oauthtoken SET access_token = %s", ["gAAAAABnot-a-valid-fernet-token"])
    authenticate = api_client.post("/v2/auth/authenticate", {"user_id": "user-1", "provider": "acme",
                                                             "scopes": ["read"]}, format="json")
    waited = api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 0})
    for response in (authenticate, waited):
        assert response.status_code == 503
        assert "FIELD_ENCRYPTION_KEY" in response.json()["detail"]

"""authenticate → start → consent at a real authorization server → callback → wait, in-process.

The service runs under Django's test client; the authorization server is authlib on loopback,
so every code exchange and refresh is a real HTTP request that the server counts.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone

from agentauth.models import AuthFlow, OAuthToken
from tests.agentauth.conftest import query_of

pytestmark = pytest.mark.django_db


def frontend_page(response) -> dict[str, str]:
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(settings.OAUTH_FRONTEND_CALLBACK_URL + "?")
    return query_of(location)


# --- authenticate and the start page -------------------------------------------------------------


def test_authenticate_without_a_stored_token_answers_pending_with_our_own_start_url(flows):
    flows.provider()
    body = flows.authenticate()
    assert set(body) == {"status", "url", "auth_id", "token"}
    assert body["status"] == "pending" and body["token"] is None
    assert body["url"] == f"{settings.PUBLIC_BASE_URL}/v2/auth/start/{body['auth_id']}"
    flow = AuthFlow.objects.get(pk=body["auth_id"])
    assert flow.status == "pending" and flow.scopes == ["read"]
    assert timedelta(minutes=9, seconds=59) < flow.expires_at - flow.created_at <= timedelta(minutes=10)


def test_authenticate_for_an_unknown_provider_is_404(flows, api_client):
    response = api_client.post("/v2/auth/authenticate", {"user_id": "u", "provider": "nope", "scopes": []},
                               format="json")
    assert response.status_code == 404 and response.json() == {"detail": "OAuth provider nope not found."}


def test_a_provider_id_of_white_space_is_looked_up_as_given_and_not_found(flows, api_client):
    response = api_client.post("/v2/auth/authenticate", {"user_id": "u", "provider": "\r\u001d", "scopes": []},
                               format="json")
    assert response.status_code == 404


@pytest.mark.parametrize("body, loc", [
    ({"provider": "acme", "scopes": []}, ["body", "user_id"]),
    ({"user_id": "u", "scopes": []}, ["body", "provider"]),
    ({"user_id": "u", "provider": "acme"}, ["body", "scopes"]),
    ({"user_id": "u", "provider": "acme", "scopes": "read"}, ["body", "scopes"]),
    ({"user_id": "u", "provider": "acme", "scopes": ["read write"]}, ["body", "scopes", 0]),
    ({"user_id": "u", "provider": "acme", "scopes": ['a"b']}, ["body", "scopes", 0]),
])
def test_invalid_authenticate_bodies_are_422(flows, api_client, body, loc):
    flows.provider()
    response = api_client.post("/v2/auth/authenticate", body, format="json")
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["detail"]] == [loc]


def test_the_start_page_binds_the_browser_with_an_httponly_lax_cookie_and_redirects_to_the_provider(
        flows, browser, oauth_server):
    client = flows.provider()
    auth_id = flows.authenticate(scopes=["read", "write"])["auth_id"]
    response = browser.get(f"/v2/auth/start/{auth_id}")
    assert response.status_code == 302
    assert response["Cache-Control"] == "no-store" and response["Referrer-Policy"] == "no-referrer"
    cookie = response.cookies[f"agentauth_flow_{uuid.UUID(auth_id).hex}"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/v2/auth/"
    assert 0 < int(cookie["max-age"]) <= 600
    location = response["Location"]
    assert location.startswith(oauth_server.authorize_url + "?")
    params = query_of(location)
    assert params["response_type"] == "code" and params["client_id"] == client.client_id
    assert params["redirect_uri"] == f"{settings.PUBLIC_BASE_URL}/v2/auth/callback/acme"
    assert params["scope"] == "read write"
    assert len(params["state"]) >= 43 and auth_id not in params["state"]
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43


def test_pkce_sends_the_verifier_only_to_the_token_endpoint_and_it_matches_the_challenge(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    challenge = oauth_server.authorize_requests[-1]["code_challenge"]
    assert "code_verifier" not in callback_url
    flows.callback(browser, callback_url)
    [token_request] = oauth_server.token_requests
    verifier = token_request["code_verifier"]
    assert 43 <= len(verifier) <= 128
    assert base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode() == challenge
    assert token_request["redirect_uri"] == f"{settings.PUBLIC_BASE_URL}/v2/auth/callback/acme"
    assert token_request["authorization"].startswith("Basic ")


def test_without_pkce_no_challenge_is_sent(flows, browser, oauth_server):
    flows.provider(uses_pkce=False)
    auth_id, callback_url = flows.begin(browser)
    assert "code_challenge" not in oauth_server.authorize_requests[-1]
    assert frontend_page(flows.callback(browser, callback_url))["status"] == "completed"
    assert "code_verifier" not in oauth_server.token_requests[-1]
    assert AuthFlow.objects.get(pk=auth_id).status == "completed"


def test_a_public_client_authenticates_with_pkce_alone(flows, browser, oauth_server):
    flows.provider(public=True, client_secret="")
    flows.complete(browser)
    [token_request] = oauth_server.token_requests
    assert token_request["authorization"] == "" and token_request["client_id"]


def test_the_same_browser_may_open_the_start_url_again_and_only_the_newest_state_is_valid(flows, browser):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    first = flows.consent(flows.start(browser, auth_id))
    second = flows.consent(flows.start(browser, auth_id))
    assert frontend_page(flows.callback(browser, first)) == {"status": "error", "error": "state_invalid"}
    assert frontend_page(flows.callback(browser, second)) == {"status": "completed", "auth_id": auth_id}


def test_a_second_browser_cannot_take_over_a_started_flow(flows, browser):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    flows.start(browser, auth_id)
    response = Client().get(f"/v2/auth/start/{auth_id}")
    assert frontend_page(response) == {"status": "error", "error": "browser_mismatch"}


def test_link_previews_and_head_requests_do_not_bind_the_flow(flows, browser, oauth_server):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    assert Client().head(f"/v2/auth/start/{auth_id}").status_code == 200
    unfurler = Client(HTTP_USER_AGENT="Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
    preview = unfurler.get(f"/v2/auth/start/{auth_id}")
    assert preview.status_code == 200 and not preview.cookies
    assert AuthFlow.objects.get(pk=auth_id).browser_hash == ""
    assert flows.start(browser, auth_id).startswith(oauth_server.authorize_url + "?")


# Fixed ids: pytest-xdist needs the same test ids in every process.
@pytest.mark.parametrize("auth_id", ["not-a-uuid", "5d7e9a1c-3b2f-4e6d-8c0a-9f1e2d3c4b5a"])
def test_the_start_page_for_an_unknown_flow_shows_an_error(browser, auth_id):
    assert frontend_page(browser.get(f"/v2/auth/start/{auth_id}")) == {"status": "error", "error": "flow_not_found"}


def test_the_start_page_for_an_expired_flow_shows_an_error(flows, browser):
    flows.provider()
    auth_id = flows.authenticate()["auth_id"]
    AuthFlow.objects.filter(pk=auth_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert frontend_page(browser.get(f"/v2/auth/start/{auth_id}")) == {"status": "error", "error": "state_expired"}


# --- the callback ---------------------------------------------------------------------------


def test_a_successful_callback_stores_encrypted_tokens_and_redirects_with_only_status_and_auth_id(
        flows, browser, api_client, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser, scopes=["read", "write"])
    response = flows.callback(browser, callback_url)
    assert response["Cache-Control"] == "no-store" and response["Referrer-Policy"] == "no-referrer"
    assert frontend_page(response) == {"status": "completed", "auth_id": auth_id}
    assert response.cookies[f"agentauth_flow_{uuid.UUID(auth_id).hex}"]["max-age"] == 0  # cleared
    token = OAuthToken.objects.get()
    issued = oauth_server.tokens[-1]
    assert token.access_token == issued.access_token and token.refresh_token == issued.refresh_token
    assert token.scopes == ["read", "write"] and token.expires_at > timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token FROM agentauth_oauthtoken")
        [(access, refresh)] = cursor.fetchall()
    assert issued.access_token not in access and issued.refresh_token not in refresh
    with connection.cursor() as cursor:
        cursor.execute("SELECT code_verifier FROM agentauth_authflow")
        [(verifier,)] = cursor.fetchall()
    assert oauth_server.token_requests[0]["code_verifier"] not in verifier
    assert issued.access_token not in response["Location"]


def test_wait_then_authenticate_answer_completed_with_the_stored_token(flows, browser, api_client, oauth_server):
    flows.provider()
    auth_id = flows.complete(browser)
    access_token = oauth_server.tokens[-1].access_token
    waited = api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 5})
    assert waited.json() == {"status": "completed", "token": access_token}
    assert waited["Cache-Control"].startswith("no-store")
    again = flows.authenticate()
    assert again == {"status": "completed", "token": access_token, "url": None, "auth_id": None}
    assert oauth_server.token_request_count() == 1


def test_a_token_for_fewer_scopes_does_not_answer_a_request_for_more(flows, browser):
    flows.provider()
    flows.complete(browser, scopes=["read"])
    assert flows.authenticate(scopes=["read"])["status"] == "completed"
    assert flows.authenticate(scopes=["read", "write"])["status"] == "pending"


def test_tokens_are_kept_per_user_and_per_agent(flows, browser):
    flows.provider()
    flows.complete(browser, user_id="alice", agent_id="agent-1")
    assert flows.authenticate(user_id="alice", agent_id="agent-1")["status"] == "completed"
    assert flows.authenticate(user_id="alice", agent_id="agent-2")["status"] == "pending"
    assert flows.authenticate(user_id="bob", agent_id="agent-1")["status"] == "pending"


def test_a_missing_state_is_refused_without_a_token_call(flows, browser, oauth_server):
    flows.provider()
    _, callback_url = flows.begin(browser)
    params = query_of(callback_url)
    response = browser.get("/v2/auth/callback/acme", {"code": params["code"]})
    assert frontend_page(response) == {"status": "error", "error": "state_missing"}
    assert oauth_server.token_request_count() == 0


def test_an_unknown_state_is_refused_without_a_token_call(flows, browser, oauth_server):
    flows.provider()
    _, callback_url = flows.begin(browser)
    response = browser.get("/v2/auth/callback/acme", {"code": query_of(callback_url)["code"], "state": "forged"})
    assert frontend_page(response) == {"status": "error", "error": "state_invalid"}
    assert oauth_server.token_request_count() == 0


def test_an_expired_state_is_refused_without_a_token_call(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    AuthFlow.objects.filter(pk=auth_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert frontend_page(flows.callback(browser, callback_url)) == {"status": "error", "error": "state_expired"}
    assert oauth_server.token_request_count() == 0


def test_a_reused_state_is_refused_and_the_code_is_exchanged_once(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    assert frontend_page(flows.callback(browser, callback_url))["status"] == "completed"
    assert frontend_page(flows.callback(browser, callback_url)) == {"status": "error", "error": "state_used"}
    assert oauth_server.token_request_count() == 1


def test_a_state_issued_for_another_provider_is_refused(flows, browser, oauth_server):
    flows.provider("acme")
    flows.provider("other")
    _, callback_url = flows.begin(browser, "acme")
    response = browser.get("/v2/auth/callback/other", query_of(callback_url))
    assert frontend_page(response) == {"status": "error", "error": "state_invalid"}
    assert oauth_server.token_request_count() == 0


def test_a_callback_without_the_flow_cookie_is_refused_and_the_right_browser_still_completes(
        flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    assert frontend_page(flows.callback(Client(), callback_url)) == {"status": "error", "error": "browser_mismatch"}
    assert oauth_server.token_request_count() == 0
    assert frontend_page(flows.callback(browser, callback_url)) == {"status": "completed", "auth_id": auth_id}


def test_a_callback_with_another_flows_cookie_is_refused(flows, browser, oauth_server):
    flows.provider()
    victim_flow, victim_callback = flows.begin(browser, user_id="victim")
    attacker = Client()
    attacker_flow, _ = flows.begin(attacker, user_id="attacker")
    # The attacker's browser, with its own flow cookie, and with that cookie renamed to the victim flow's.
    assert frontend_page(flows.callback(attacker, victim_callback))["error"] == "browser_mismatch"
    attacker_value = attacker.cookies[f"agentauth_flow_{uuid.UUID(attacker_flow).hex}"].value
    attacker.cookies[f"agentauth_flow_{uuid.UUID(victim_flow).hex}"] = attacker_value
    assert frontend_page(flows.callback(attacker, victim_callback))["error"] == "browser_mismatch"
    assert oauth_server.token_request_count() == 0
    assert AuthFlow.objects.get(pk=victim_flow).status == "pending"


def test_a_provider_error_redirects_with_the_error_and_makes_no_token_call(flows, browser, api_client, oauth_server):
    flows.provider()
    oauth_server.consent = "deny"
    auth_id, callback_url = flows.begin(browser)
    assert query_of(callback_url)["error"] == "access_denied"
    response = flows.callback(browser, callback_url)
    assert frontend_page(response) == {"status": "error", "error": "access_denied", "auth_id": auth_id}
    assert oauth_server.token_request_count() == 0
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 5}).json() == {"status": "not_found",
                                                                                "token": None}


def test_an_unknown_provider_error_code_is_not_reflected(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    state = query_of(callback_url)["state"]
    response = browser.get("/v2/auth/callback/acme", {"state": state, "error": "<script>x</script>",
                                                      "error_description": "Call +1 555 0100 to unlock"})
    assert frontend_page(response) == {"status": "error", "error": "provider_error", "auth_id": auth_id}
    assert oauth_server.token_request_count() == 0


def test_a_callback_without_code_or_error_fails_the_flow(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    response = browser.get("/v2/auth/callback/acme", {"state": query_of(callback_url)["state"]})
    assert frontend_page(response) == {"status": "error", "error": "code_missing", "auth_id": auth_id}
    assert oauth_server.token_request_count() == 0


def test_a_token_endpoint_500_redirects_with_an_error_and_stores_nothing(flows, browser, api_client, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    oauth_server.token_mode = "error500"
    response = flows.callback(browser, callback_url)
    assert frontend_page(response) == {"status": "error", "error": "exchange_failed", "auth_id": auth_id}
    assert oauth_server.token_request_count() == 1 and not OAuthToken.objects.exists()
    assert AuthFlow.objects.get(pk=auth_id).status == "failed"
    assert api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 0}).json()["status"] == "not_found"


def test_a_token_endpoint_that_stalls_past_the_read_timeout_redirects_with_provider_timeout(
        flows, browser, oauth_server, settings):
    settings.OAUTH_TOKEN_READ_TIMEOUT_SECONDS = 0.5
    oauth_server.stall_seconds = 2
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    oauth_server.token_mode = "stall"
    response = flows.callback(browser, callback_url)
    assert frontend_page(response) == {"status": "error", "error": "provider_timeout", "auth_id": auth_id}
    assert not OAuthToken.objects.exists()


def test_a_redirecting_token_endpoint_is_not_followed(flows, browser, oauth_server):
    flows.provider()
    _, callback_url = flows.begin(browser)
    oauth_server.token_mode = "redirect"
    assert frontend_page(flows.callback(browser, callback_url))["error"] == "exchange_failed"
    assert oauth_server.token_request_count() == 1 and oauth_server.redirected_requests == 0


def test_a_rejected_code_redirects_with_exchange_failed(flows, browser, oauth_server):
    flows.provider()
    auth_id, callback_url = flows.begin(browser)
    oauth_server.codes.clear()  # the provider no longer knows the code: invalid_grant
    assert frontend_page(flows.callback(browser, callback_url))["error"] == "exchange_failed"


def test_a_token_url_that_turns_private_after_creation_is_never_called(flows, browser, oauth_server, api_client):
    from core.egress import use_resolver

    flows.provider()
    with use_resolver(lambda host: ["93.184.215.14"]):
        patched = api_client.patch("/v2/auth/providers/acme", {"token_url": "https://tokens.example.com/token"},
                                   format="json")
    assert patched.status_code == 200
    auth_id, callback_url = flows.begin(browser)
    with use_resolver(lambda host: ["169.254.169.254"]):  # DNS now points at the metadata service
        response = flows.callback(browser, callback_url)
    assert frontend_page(response)["error"] == "exchange_failed"
    assert oauth_server.token_request_count() == 0


@pytest.mark.parametrize("path, params, loc", [
    ("/v2/auth/callback/bad%20id", {"state": "s"}, ["path", "provider_id"]),
    ("/v2/auth/callback/acme", {"state": "s" * 513}, ["query", "state"]),
    ("/v2/auth/callback/acme", {"code": "c" * 4097}, ["query", "code"]),
    ("/v2/auth/callback/acme", {"error": "e" * 257}, ["query", "error"]),
    ("/v2/auth/callback/acme", {"state": "a\x00b"}, ["query", "state"]),
])
def test_invalid_callback_parameters_are_422(browser, path, params, loc, db):
    response = browser.get(path, params)
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["detail"]] == [loc]
    assert response["Cache-Control"] == "no-store" and response["Referrer-Policy"] == "no-referrer"


def test_the_callback_only_answers_get(browser, db):
    assert browser.post("/v2/auth/callback/acme").status_code == 405


def test_a_repeated_state_parameter_is_422(browser, db):
    response = browser.get("/v2/auth/callback/acme?state=a&state=b")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "state"]


def test_an_unexpected_failure_in_the_callback_redirects_instead_of_a_500(flows, browser, monkeypatch):
    from agentauth import services

    flows.provider()
    _, callback_url = flows.begin(browser)
    monkeypatch.setattr(services, "_flow_complete", lambda *a: 1 / 0)
    assert frontend_page(flows.callback(browser, callback_url)) == {"status": "error", "error": "server_error"}


def test_the_flow_endpoints_are_throttled_in_the_auth_flow_scope(flows, api_client, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "auth-flow": "2/min"}
    flows.provider()
    assert [flows.api.post("/v2/auth/authenticate", {"user_id": "u", "provider": "acme", "scopes": []},
                           format="json").status_code for _ in range(3)] == [200, 200, 429]
    browser = Client(REMOTE_ADDR=f"10.{uuid.uuid4().int % 250}.7.9")
    codes = [query_of(browser.get("/v2/auth/callback/acme")["Location"])["error"] for _ in range(3)]
    assert codes == ["state_missing", "state_missing", "rate_limited"]


def test_callback_url_paths_in_redirects_never_carry_the_code(flows, browser):
    flows.provider()
    _, callback_url = flows.begin(browser)
    code = query_of(callback_url)["code"]
    location = flows.callback(browser, callback_url)["Location"]
    assert code not in location and "code=" not in urlsplit(location).query

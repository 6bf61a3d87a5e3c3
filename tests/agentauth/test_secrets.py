"""Canary sweep: the client secret and the tokens appear in no response, log line or admin page.

The only bodies allowed to carry an access token are the two that exist to deliver it
(authenticate and wait answering `completed`); refresh tokens and the client secret appear nowhere.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from agentauth.models import AuthFlow, OAuthProvider, OAuthToken
from tests.agentauth.conftest import query_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_browser(django_user_model):
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-for-tests")
    client = Client()
    client.force_login(user)
    return client


class Recorder:
    """Keeps every response a test sees, to sweep them all at the end."""

    def __init__(self):
        self.responses = []

    def __call__(self, response, *, delivers_token=False):
        self.responses.append((response, delivers_token))
        return response

    def texts(self, *, include_deliveries: bool):
        for response, delivers in self.responses:
            if delivers and not include_deliveries:
                continue
            headers = "\n".join(f"{k}: {v}" for k, v in response.items())
            body = b"".join(response.streaming_content) if response.streaming else response.content
            yield f"{response.status_code}\n{headers}\n{body.decode(errors='replace')}"


# The authorization server runs in this process too; its own (authlib, werkzeug) log lines are not the service's.
TEST_SERVER_LOGGERS = ("authlib", "werkzeug")


def service_logs(caplog, capfd) -> str:
    records = [f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records
               if not r.name.startswith(TEST_SERVER_LOGGERS)]
    captured = "".join(capfd.readouterr()).splitlines()
    lines = [line for line in captured if not any(f" {name}" in line for name in TEST_SERVER_LOGGERS)]
    return "\n".join(records + lines)


def test_no_secret_or_token_leaks_into_responses_logs_or_the_admin(flows, browser, api_client, admin_browser,
                                                                 oauth_server, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    seen = Recorder()
    client = flows.provider()
    provider = OAuthProvider.objects.get()

    # A successful flow, with its token delivered the two intended ways.
    auth_id, callback_url = flows.begin(browser)
    seen(flows.callback(browser, callback_url))
    seen(api_client.get(f"/v2/auth/wait/{auth_id}", {"timeout": 1}), delivers_token=True)
    seen(api_client.post("/v2/auth/authenticate", {"user_id": "user-1", "provider": "acme", "scopes": ["read"]},
                         format="json"), delivers_token=True)
    # A refresh (new access and refresh tokens), then every error path around providers and flows.
    OAuthToken.objects.update(expires_at=timezone.now() - timedelta(minutes=5))
    seen(api_client.post("/v2/auth/authenticate", {"user_id": "user-1", "provider": "acme", "scopes": ["read"]},
                         format="json"), delivers_token=True)
    seen(flows.callback(browser, callback_url))  # replay
    seen(browser.get("/v2/auth/callback/acme", {"state": "forged", "code": "x"}))
    seen(browser.get("/v2/auth/callback/bad id"))
    seen(Client().get(f"/v2/auth/start/{auth_id}"))
    oauth_server.token_mode = "error500"
    _, failing_callback = flows.begin(browser, user_id="user-2")
    seen(flows.callback(browser, failing_callback))
    oauth_server.token_mode = "ok"
    for request in (
        lambda: api_client.get("/v2/auth/providers"),
        lambda: api_client.get("/v2/auth/providers/acme"),
        lambda: api_client.patch("/v2/auth/providers/acme", {"name": "Acme 2"}, format="json"),
        lambda: api_client.patch("/v2/auth/providers/acme", {"token_url": "http://10.0.0.1/x"}, format="json"),
        lambda: api_client.patch("/v2/auth/providers/acme", {"uses_pkce": "no idea"}, format="json"),
        lambda: api_client.post("/v2/auth/providers", {"provider_id": "acme", "name": "x", "client_id": "x",
                                                       "client_secret": client.client_secret,
                                                       "auth_url": oauth_server.authorize_url,
                                                       "token_url": oauth_server.token_url}, format="json"),
        lambda: api_client.options("/v2/auth/providers/acme"),
        lambda: api_client.get("/api/schema/"),
        lambda: api_client.delete("/v2/auth/tokens?user_id=nobody&provider=acme"),
        lambda: browser.get("/auth/done", {"status": "completed", "auth_id": auth_id}),
    ):
        seen(request())

    # The admin: lists and change pages of providers, tokens and flows.
    token = OAuthToken.objects.get(user_id="user-1")
    for path in ("/admin/agentauth/oauthprovider/", f"/admin/agentauth/oauthprovider/{provider.pk}/change/",
                 "/admin/agentauth/oauthprovider/add/", "/admin/agentauth/oauthtoken/",
                 f"/admin/agentauth/oauthtoken/{token.pk}/change/", "/admin/agentauth/authflow/",
                 f"/admin/agentauth/authflow/{auth_id}/change/", "/admin/agentauth/oauthtoken/?q=user-1"):
        page = seen(admin_browser.get(path))
        assert page.status_code == 200, path

    issued = oauth_server.tokens
    assert len(issued) == 2  # the first consent and the refresh (the 500 issued nothing)
    never_anywhere = [client.client_secret] + [t.refresh_token for t in issued]
    access_tokens = [t.access_token for t in issued]
    everything = list(seen.texts(include_deliveries=True))
    outside_deliveries = list(seen.texts(include_deliveries=False))
    logs = service_logs(caplog, capfd)
    assert "OAuth flow" in logs  # the sweep did see the service's log lines
    for canary in never_anywhere:
        assert not any(canary in text for text in everything)
        assert canary not in logs
    for canary in access_tokens:
        assert not any(canary in text for text in outside_deliveries)
        assert canary not in logs


def test_the_provider_admin_uses_a_password_input_that_never_renders_the_secret(admin_browser, flows):
    client = flows.provider()
    provider = OAuthProvider.objects.get()
    html = admin_browser.get(f"/admin/agentauth/oauthprovider/{provider.pk}/change/").content.decode()
    assert 'type="password" name="client_secret"' in html
    assert client.client_secret not in html


def admin_form(workspace, oauth_server, **overrides):
    return {"workspace": str(workspace.id), "provider_id": "from-admin", "name": "From admin", "client_id": "cid",
            "client_secret": "admin-typed-secret", "auth_url": oauth_server.authorize_url,
            "token_url": oauth_server.token_url, "uses_pkce": "on", "code_challenge_method": "S256", **overrides}


def test_the_admin_creates_and_edits_providers_through_the_services(admin_browser, workspace, oauth_server):
    created = admin_browser.post("/admin/agentauth/oauthprovider/add/", admin_form(workspace, oauth_server))
    assert created.status_code == 302
    provider = OAuthProvider.objects.get(provider_id="from-admin")
    assert provider.client_secret == "admin-typed-secret" and provider.uses_pkce
    form = admin_form(workspace, oauth_server, name="Renamed", client_secret="")
    changed = admin_browser.post(f"/admin/agentauth/oauthprovider/{provider.pk}/change/", form)
    assert changed.status_code == 302
    provider.refresh_from_db()
    assert provider.name == "Renamed" and provider.client_secret == "admin-typed-secret"


def test_the_admin_refuses_a_private_token_url_with_a_form_error(admin_browser, workspace, oauth_server):
    response = admin_browser.post("/admin/agentauth/oauthprovider/add/",
                                  admin_form(workspace, oauth_server, token_url="http://169.254.169.254/token"))
    assert response.status_code == 200 and "169.254.169.254" in response.content.decode()
    assert "admin-typed-secret" not in response.content.decode()
    assert not OAuthProvider.objects.exists()


def test_tokens_and_flows_are_read_only_in_the_admin(admin_browser, flows, browser):
    flows.provider()
    auth_id = flows.complete(browser)
    token = OAuthToken.objects.get()
    assert admin_browser.get("/admin/agentauth/oauthtoken/add/").status_code == 403
    assert admin_browser.get("/admin/agentauth/authflow/add/").status_code == 403
    page = admin_browser.get(f"/admin/agentauth/oauthtoken/{token.pk}/change/").content.decode()
    assert 'name="access_token"' not in page and 'name="refresh_token"' not in page
    flow_page = admin_browser.get(f"/admin/agentauth/authflow/{auth_id}/change/").content.decode()
    assert "state_hash" not in flow_page and "code_verifier" not in flow_page and "browser_hash" not in flow_page


def test_state_and_browser_binding_are_stored_only_as_hashes(flows, browser):
    flows.provider()
    pending = flows.authenticate()
    authorize_url = flows.start(browser, pending["auth_id"])
    state = query_of(authorize_url)["state"]
    cookie = browser.cookies[f"agentauth_flow_{uuid.UUID(pending['auth_id']).hex}"].value
    flow = AuthFlow.objects.get(pk=pending["auth_id"])
    assert state not in flow.state_hash and cookie not in flow.browser_hash
    assert len(flow.state_hash) == len(flow.browser_hash) == 64
    with connection.cursor() as cursor:
        cursor.execute("SELECT code_verifier FROM agentauth_authflow")
        [(stored_verifier,)] = cursor.fetchall()
    assert len(flow.code_verifier) >= 43 and flow.code_verifier not in stored_verifier  # encrypted at rest

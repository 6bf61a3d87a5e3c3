"""Fixtures for the OAuth auth service: the loopback authorization server, a browser, flow helpers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.agentauth.support_oauth_server import OAuthTestServer
from tests.support_processes import server_fixture

oauth_server_session = server_fixture(lambda: OAuthTestServer().start())


@pytest.fixture
def oauth_server(oauth_server_session):
    """authlib's authorization server on loopback, emptied and well-behaved at the start of each test."""
    oauth_server_session.reset()
    yield oauth_server_session
    oauth_server_session.reset()


@pytest.fixture(autouse=True)
def _auth_settings(settings):
    """Tokens may go to the loopback server; the flow endpoints are not rate limited unless a test says so."""
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    settings.THROTTLE_RATES = {**django_settings.THROTTLE_RATES, "auth-flow": None}
    settings.OAUTH_TOKEN_READ_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def browser():
    """A user's browser: no API key, keeps cookies."""
    return Client()


def query_of(url: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


class FlowKit:
    """Drive flows in-process: the service through Django's test client, consent at the real server."""

    def __init__(self, api_client, oauth_server):
        self.api = api_client
        self.server = oauth_server

    def provider(self, provider_id: str = "acme", *, uses_pkce: bool = True, public: bool = False, **overrides):
        redirect_uri = f"{django_settings.PUBLIC_BASE_URL}/v2/auth/callback/{provider_id}"
        client = self.server.register_client(redirect_uri=redirect_uri, public=public)
        body = {"provider_id": provider_id, "name": provider_id.title(), "client_id": client.client_id,
                "client_secret": client.client_secret, "auth_url": self.server.authorize_url,
                "token_url": self.server.token_url, "uses_pkce": uses_pkce, **overrides}
        response = self.api.post("/v2/auth/providers", body, format="json")
        assert response.status_code == 200, response.content
        return client

    def authenticate(self, provider_id: str = "acme", *, user_id: str = "user-1", scopes=("read",), agent_id=None):
        body = {"user_id": user_id, "provider": provider_id, "scopes": list(scopes)}
        if agent_id is not None:
            body["agent_id"] = agent_id
        response = self.api.post("/v2/auth/authenticate", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    def start(self, browser, auth_id: str) -> str:
        """Open the start URL in `browser`; return the provider URL it was sent to."""
        response = browser.get(f"/v2/auth/start/{auth_id}")
        assert response.status_code == 302, response.content
        return response["Location"]

    def consent(self, authorize_url: str) -> str:
        """The user at the provider: returns the callback URL the provider redirects to."""
        response = httpx.get(authorize_url, follow_redirects=False, timeout=10)
        assert response.status_code == 302, response.text
        return response.headers["location"]

    def callback(self, browser, callback_url: str):
        parts = urlsplit(callback_url)
        return browser.get(parts.path, query_of(callback_url))

    def begin(self, browser, provider_id: str = "acme", **kwargs) -> tuple[str, str]:
        """authenticate → start → consent; return (auth_id, the provider's callback URL)."""
        pending = self.authenticate(provider_id, **kwargs)
        assert pending["status"] == "pending"
        return pending["auth_id"], self.consent(self.start(browser, pending["auth_id"]))

    def complete(self, browser, provider_id: str = "acme", **kwargs) -> str:
        auth_id, callback_url = self.begin(browser, provider_id, **kwargs)
        response = self.callback(browser, callback_url)
        assert query_of(response["Location"]) == {"status": "completed", "auth_id": auth_id}
        return auth_id


@pytest.fixture
def flows(api_client, oauth_server):
    return FlowKit(api_client, oauth_server)

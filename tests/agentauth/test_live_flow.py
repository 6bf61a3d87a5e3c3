"""The whole OAuth flow over real HTTP: the service under Daphne, authlib's server on loopback, a cookie-keeping
browser (httpx). Also the race: 20 parallel callbacks with one code, exactly one token request."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connection

from accounts.services import api_key_create, workspace_create
from agentauth.models import AuthFlow, OAuthToken
from tests.agentauth.conftest import query_of
from tests.agentauth.support_oauth_server import ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX
from tests.support_processes import LiveServer

pytestmark = [pytest.mark.live]


@pytest.fixture
def auth_live_server(transactional_db, tmp_path):
    """Daphne serving the service; tokens may go to loopback (the allowlist), full debug logging for the sweep."""
    server = LiveServer(env={"EGRESS_ALLOWLIST": "127.0.0.1", "DEBUG": "true", "LOG_LEVEL": "DEBUG",
                             "THROTTLE_RATES": "auth-flow=100000/min,default=100000/min"},
                        log_path=tmp_path / "server.log").start()
    yield server
    server.stop()


@pytest.fixture
def agent(auth_live_server):
    """The agent's side: an httpx client with an auth:manage key for a fresh workspace."""
    workspace = workspace_create(name="live-auth")
    _, raw_key = api_key_create(workspaces=[workspace], permissions=["auth:manage"])
    with httpx.Client(base_url=auth_live_server.url, timeout=30,
                      headers={"X-Api-Key": raw_key, "X-Tenant-Id": str(workspace.id)}) as client:
        yield client


def register_provider(agent, live, oauth_server, provider_id="acme"):
    client = oauth_server.register_client(redirect_uri=f"{live.url}/v2/auth/callback/{provider_id}")
    response = agent.post("/v2/auth/providers", json={
        "provider_id": provider_id, "name": "Acme", "client_id": client.client_id,
        "client_secret": client.client_secret, "auth_url": oauth_server.authorize_url,
        "token_url": oauth_server.token_url, "uses_pkce": True})
    assert response.status_code == 200, response.text
    return client


def test_the_whole_flow_over_real_http(agent, auth_live_server, oauth_server):
    live = auth_live_server
    as_client = register_provider(agent, live, oauth_server)
    pending = agent.post("/v2/auth/authenticate", json={"user_id": "alice", "provider": "acme",
                                                        "scopes": ["read", "write"]}).json()
    assert pending["status"] == "pending" and pending["url"] == f"{live.url}/v2/auth/start/{pending['auth_id']}"

    # The agent long-polls while the user signs in.
    waited = {}
    waiter = threading.Thread(target=lambda: waited.update(
        agent.get(f"/v2/auth/wait/{pending['auth_id']}", params={"timeout": 60}, timeout=90).json()))
    waiter.start()

    with httpx.Client(follow_redirects=True, timeout=30) as user_browser:
        page = user_browser.get(pending["url"])
    start, authorize, callback = page.history
    assert urlsplit(str(start.url)).path == f"/v2/auth/start/{pending['auth_id']}"
    assert str(authorize.url).startswith(oauth_server.authorize_url)
    assert urlsplit(str(callback.url)).path == "/v2/auth/callback/acme"
    assert callback.headers["cache-control"] == "no-store" and callback.headers["referrer-policy"] == "no-referrer"
    assert str(page.url) == f"{live.url}/auth/done?status=completed&auth_id={pending['auth_id']}"
    assert page.status_code == 200 and "Signed in" in page.text

    waiter.join(90)
    issued = oauth_server.tokens[-1]
    assert waited == {"status": "completed", "token": issued.access_token}
    assert issued.access_token.startswith(ACCESS_TOKEN_PREFIX)
    completed = agent.post("/v2/auth/authenticate", json={"user_id": "alice", "provider": "acme",
                                                          "scopes": ["write"]}).json()
    assert completed == {"status": "completed", "token": issued.access_token, "url": None, "auth_id": None}
    assert oauth_server.token_request_count() == 1

    # Stored encrypted; never in a redirect, the page or the service's log.
    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token FROM agentauth_oauthtoken")
        [(access, refresh)] = cursor.fetchall()
    assert ACCESS_TOKEN_PREFIX not in access and REFRESH_TOKEN_PREFIX not in refresh
    for response in page.history + [page]:
        assert issued.access_token not in response.headers.get("location", "") + response.text
    log = live.output()
    assert "OAuth flow" in log and "completed" in log
    for secret in (as_client.client_secret, issued.access_token, issued.refresh_token, ACCESS_TOKEN_PREFIX,
                   REFRESH_TOKEN_PREFIX):
        assert secret not in log

    revoked = agent.delete("/v2/auth/tokens", params={"user_id": "alice", "provider": "acme"})
    assert revoked.json() == {"deleted": 1}
    again = agent.post("/v2/auth/authenticate", json={"user_id": "alice", "provider": "acme",
                                                      "scopes": ["read"]}).json()
    assert again["status"] == "pending"


def test_of_20_parallel_callbacks_with_one_code_exactly_one_exchanges_it(agent, auth_live_server, oauth_server):
    live = auth_live_server
    register_provider(agent, live, oauth_server)
    pending = agent.post("/v2/auth/authenticate", json={"user_id": "alice", "provider": "acme",
                                                        "scopes": ["read"]}).json()
    with httpx.Client(follow_redirects=False, timeout=30) as user_browser:
        to_provider = user_browser.get(pending["url"]).headers["location"]
        callback_url = httpx.get(to_provider, follow_redirects=False).headers["location"]
        cookies = dict(user_browser.cookies)
    assert callback_url.startswith(f"{live.url}/v2/auth/callback/acme?")
    barrier = threading.Barrier(20)

    def replay(_):
        with httpx.Client(timeout=60, cookies=cookies) as client:
            barrier.wait()
            return query_of(client.get(callback_url, follow_redirects=False).headers["location"])

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(replay, range(20)))
    assert oauth_server.token_request_count() == 1
    assert sum(o == {"status": "completed", "auth_id": pending["auth_id"]} for o in outcomes) == 1
    assert sorted(o.get("error", "") for o in outcomes) == [""] + ["state_used"] * 19
    assert AuthFlow.objects.get(pk=pending["auth_id"]).status == "completed"
    assert OAuthToken.objects.count() == 1

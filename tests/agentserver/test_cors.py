"""CORS on the Agent Server API (AGENT_SERVER_CORS_ALLOW_ORIGINS): preflights and answers for listed origins, with
API keys only; nothing for other origins, other routes, or when the setting is empty."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient

APP = "http://localhost:3000"


@pytest.fixture
def cors(settings):
    settings.AGENT_SERVER_CORS_ALLOW_ORIGINS = [APP]
    return settings


@pytest.fixture
def key(db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


def preflight(client, path: str, origin: str = APP, method: str = "POST"):
    return client.options(path, HTTP_ORIGIN=origin, HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
                          HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type,x-api-key")


# A fixed thread id: pytest-xdist needs the same test ids in every process.
T = "/api/threads/0c9b6f3e-6a55-4b7e-9a39-1d2f3a4b5c6d"


@pytest.mark.parametrize("path", ["/api/threads", T, f"{T}/state", f"{T}/runs/stream", "/api/assistants/search"])
def test_a_listed_origins_preflight_is_answered_on_agent_server_routes(client, cors, path):
    answer = preflight(client, path)
    assert answer.status_code == 204
    assert answer["Access-Control-Allow-Origin"] == APP and "Origin" in answer["Vary"]
    assert "POST" in answer["Access-Control-Allow-Methods"]
    assert answer["Access-Control-Allow-Headers"] == "content-type,x-api-key"
    assert "Access-Control-Allow-Credentials" not in answer


def test_a_listed_origin_writes_with_an_api_key_and_reads_the_exposed_headers(client, cors, key):
    created = client.post("/api/threads", {}, content_type="application/json", HTTP_ORIGIN=APP, HTTP_X_API_KEY=key)
    assert created.status_code == 200, created.content
    assert created["Access-Control-Allow-Origin"] == APP
    assert "Content-Location" in created["Access-Control-Expose-Headers"]
    # Errors carry the headers too, so that the page can read them.
    missing = client.get("/api/threads/0c9b6f3e-6a55-4b7e-9a39-1d2f3a4b5c6d", HTTP_ORIGIN=APP, HTTP_X_API_KEY=key)
    assert missing.status_code == 404 and missing["Access-Control-Allow-Origin"] == APP


def test_another_origin_gets_no_cors_and_its_writes_stay_refused(client, cors, key):
    answer = preflight(client, "/api/threads", origin="http://evil.test")
    assert "Access-Control-Allow-Origin" not in answer
    refused = client.post("/api/threads", {}, content_type="application/json", HTTP_ORIGIN="http://evil.test",
                          HTTP_X_API_KEY=key)
    assert refused.status_code == 403 and "Access-Control-Allow-Origin" not in refused


def test_a_cookie_authenticated_write_from_a_listed_origin_is_still_refused(cors, db):
    browser = DjangoClient()
    browser.force_login(get_user_model().objects.create_user(username="alice", password="pw-not-used"))
    refused = browser.post("/api/threads", {}, content_type="application/json", HTTP_ORIGIN=APP)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("Cross-origin request refused")


def test_without_the_setting_or_outside_the_agent_server_there_is_no_cors(client, settings, key):
    settings.AGENT_SERVER_CORS_ALLOW_ORIGINS = []
    assert "Access-Control-Allow-Origin" not in preflight(client, "/api/threads")
    settings.AGENT_SERVER_CORS_ALLOW_ORIGINS = ["*"]
    assert preflight(client, "/api/threads")["Access-Control-Allow-Origin"] == APP
    assert "Access-Control-Allow-Origin" not in preflight(client, "/v2/deployments")

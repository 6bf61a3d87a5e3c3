"""Every REST error shape, against real endpoints (the workspaces API)."""

from __future__ import annotations

import json
import socket
import uuid
from urllib.parse import urlsplit

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_validation_errors_are_422_with_fastapi_locations(api_client):
    response = api_client.post("/api/v1/workspaces", {"name": "bad/name!"}, format="json")
    assert response.status_code == 422
    assert response.json() == {"detail": [{"loc": ["body", "name"],
                                           "msg": "This value does not match the required pattern.",
                                           "type": "value_error"}]}


def test_a_missing_field_is_reported_as_missing(api_client):
    response = api_client.post("/api/v1/workspaces", {}, format="json")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "name"]
    assert response.json()["detail"][0]["type"] == "missing"


def test_malformed_json_is_422_located_at_the_body(api_client):
    response = api_client.generic("POST", "/api/v1/workspaces", "{not json", content_type="application/json")
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body"] and error["type"] == "json_invalid"


def test_a_bad_tenant_header_is_422_located_at_the_header(api_client):
    api_client.credentials(HTTP_X_API_KEY=api_client.raw_key, HTTP_X_TENANT_ID="not-a-uuid")
    response = api_client.get("/api/v1/workspaces")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["header", "x-tenant-id"]


def test_a_missing_key_is_401(db):
    response = APIClient().get("/api/v1/workspaces")
    assert response.status_code == 401
    assert set(response.json()) == {"detail"}


def test_a_missing_permission_is_403(make_client, workspace):
    client = make_client(workspace, permissions=["tracing:read"])
    response = client.post("/api/v1/workspaces", {"name": "new"}, format="json")
    assert response.status_code == 403
    assert "workspaces:manage" in response.json()["detail"]


def test_another_workspaces_object_is_404_like_a_missing_one(api_client, other_workspace):
    other = api_client.get(f"/api/v1/workspaces/{other_workspace.id}")
    missing = api_client.get(f"/api/v1/workspaces/{uuid.uuid4()}")
    assert other.status_code == missing.status_code == 404
    assert set(other.json()) == set(missing.json()) == {"detail"}


def test_an_unknown_route_is_a_json_404(api_client):
    response = api_client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_a_wrong_method_is_405(api_client):
    response = api_client.delete("/api/v1/workspaces")
    assert response.status_code == 405
    assert response.json() == {"detail": "Method Not Allowed"}
    response = api_client.put(f"/api/v1/workspaces/{api_client.workspace.id}", {}, format="json")
    assert response.status_code == 405
    assert set(response.json()) == {"detail"}


def test_a_duplicate_is_409(api_client, workspace):
    response = api_client.post("/api/v1/workspaces", {"name": workspace.name}, format="json")
    assert response.status_code == 409
    assert workspace.name in response.json()["detail"]


def test_a_body_over_the_limit_is_413(api_client, settings):
    settings.JSON_BODY_MAX_BYTES = 1000
    response = api_client.post("/api/v1/workspaces", {"name": "x" * 2000}, format="json")
    assert response.status_code == 413
    assert "limit" in response.json()["detail"]


def test_throttled_requests_get_429_with_retry_after(api_client, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "workspace-create": "2/min"}
    statuses = [api_client.post("/api/v1/workspaces", {"name": f"ws {i}"}, format="json").status_code
                for i in range(3)]
    assert statuses == [201, 201, 429]
    response = api_client.post("/api/v1/workspaces", {"name": "ws 9"}, format="json")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert set(response.json()) == {"detail"}


def test_throttles_count_per_workspace(make_client, workspace, other_workspace, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "workspace-create": "1/min"}
    first, second = make_client(workspace), make_client(workspace)
    outsider = make_client(other_workspace)
    assert first.post("/api/v1/workspaces", {"name": "a"}, format="json").status_code == 201
    assert second.post("/api/v1/workspaces", {"name": "b"}, format="json").status_code == 429
    assert outsider.post("/api/v1/workspaces", {"name": "c"}, format="json").status_code == 201


@override_settings(DEBUG=False)
def test_an_unexpected_exception_is_a_bare_500(api_client, monkeypatch):
    from accounts import api

    def explode(**kwargs):
        raise RuntimeError("secret-canary-in-traceback")

    monkeypatch.setattr(api.services, "workspace_create", explode)
    client = api_client
    client.raise_request_exception = False
    response = client.post("/api/v1/workspaces", {"name": "boom"}, format="json")
    assert response.status_code == 500
    assert response.json() == {"detail": "Internal Server Error"}


@pytest.mark.urls("tests.error_urls")
@pytest.mark.parametrize("name, status", [("BadRequest", 400), ("PermissionDenied", 403), ("NotFound", 404),
                                          ("Conflict", 409), ("PayloadTooLarge", 413)])
def test_domain_errors_become_detail_bodies_with_their_status(client, name, status):
    response = client.get(f"/raise/{name}")
    assert response.status_code == status
    assert response.json() == {"detail": "Told to fail."}


def raw_exchange(url: str, head: bytes) -> bytes:
    """Send a request head over a plain socket and read until the server closes the connection."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize("length", [16_400, 1_000_000])
def test_a_request_line_over_16_kib_is_414_and_the_connection_is_closed(live_server_process, length):
    head = b"GET /api/v1/workspaces?q=" + b"a" * length + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = raw_exchange(live_server_process.url, head)
    status_line, _, rest = answer.partition(b"\r\n")
    head_lines, _, body = rest.partition(b"\r\n\r\n")
    headers = head_lines.split(b"\r\n")
    assert status_line == b"HTTP/1.1 414 URI Too Long"
    assert b"Connection: close" in headers and b"Content-Type: application/json" in headers
    assert json.loads(body) == {"detail": "The request line is too long: request line and headers may take at most "
                                          "16384 bytes."}


def test_headers_over_the_limit_are_431_and_a_long_url_within_it_is_served(live_server_process):
    many = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"f" * 1000) for i in range(20))
    answer = raw_exchange(live_server_process.url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + many + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b'"detail": "The request headers are too large' in answer
    served = raw_exchange(live_server_process.url, b"GET /healthz?q=" + b"a" * 15_000 +
                          b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert served.startswith(b"HTTP/1.1 200 OK\r\n")

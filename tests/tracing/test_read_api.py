"""Reading projects (sessions) and runs back, within one's own workspace only."""

from __future__ import annotations

import uuid

import orjson
import pytest

from core.pagination import MAX_OFFSET
from tests.tracing.support_wire import run_body
from tracing.selectors import EXPORT_FIELDS

pytestmark = pytest.mark.django_db


def ingest(client, *runs):
    response = client.post("/runs/batch", orjson.dumps({"post": list(runs)}), content_type="application/json")
    assert response.status_code == 202, response.content
    return runs


def test_sessions_are_listed_filtered_by_name_and_limited_to_the_workspace(api_client, outsider_client):
    ingest(api_client, run_body(session_name="alpha"), run_body(session_name="beta"))
    ingest(outsider_client, run_body(session_name="gamma"))
    listed = api_client.get("/api/v1/sessions").json()
    assert [project["name"] for project in listed] == ["alpha", "beta"]
    assert set(listed[0]) == {"id", "name", "tenant_id", "start_time"}
    assert listed[0]["tenant_id"] == str(api_client.workspace.id)
    assert [p["name"] for p in api_client.get("/api/v1/sessions", {"name": "beta"}).json()] == ["beta"]
    assert api_client.get("/api/v1/sessions", {"name": "gamma"}).json() == []
    assert [p["name"] for p in api_client.get("/api/v1/sessions", {"limit": 1, "offset": 1}).json()] == ["beta"]


def test_a_bad_query_parameter_is_422_in_the_query(api_client):
    response = api_client.get("/api/v1/sessions", {"limit": 0})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "limit"]


@pytest.mark.parametrize("params", [{"offset": 2**63}, {"offset": 10**30}, {"offset": MAX_OFFSET + 1},
                                    {"limit": 2**63}], ids=["offset-2^63", "offset-10^30", "past-the-bound", "limit"])
def test_an_absurd_session_offset_or_limit_is_422_not_an_overflow(api_client, params):
    response = api_client.get("/api/v1/sessions", params)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", *params]
    assert api_client.get("/api/v1/sessions", {"offset": MAX_OFFSET}).json() == []


def test_a_session_shows_its_run_count_and_time_range(api_client):
    first = run_body(session_name="alpha")
    last = run_body(session_name="alpha", offset_ms=90_000)
    ingest(api_client, first, last)
    project_id = api_client.get("/api/v1/sessions", {"name": "alpha"}).json()[0]["id"]
    detail = api_client.get(f"/api/v1/sessions/{project_id}").json()
    assert detail["run_count"] == 2 and detail["name"] == "alpha"
    assert detail["first_run_start_time"] == "2026-03-01T12:00:00Z"
    assert detail["last_run_start_time"] == "2026-03-01T12:01:30Z"


def test_another_workspaces_session_and_run_are_404_like_missing_ones(api_client, outsider_client):
    [theirs] = ingest(outsider_client, run_body(session_name="secret"))
    project_id = outsider_client.get("/api/v1/sessions").json()[0]["id"]
    for path in (f"/api/v1/sessions/{project_id}", f"/api/v1/sessions/{uuid.uuid4()}",
                 f"/api/v1/runs/{theirs['id']}", f"/api/v1/runs/{uuid.uuid4()}"):
        response = api_client.get(path)
        assert response.status_code == 404, path
        assert set(response.json()) == {"detail"}
    assert outsider_client.get(f"/api/v1/runs/{theirs['id']}").status_code == 200


def test_a_run_reads_back_with_every_exportable_field(api_client):
    parent = run_body(session_name="alpha", tags=["t1"], extra={"metadata": {"k": "v"}})
    child = run_body(parent=parent, run_type="llm", end_time="2026-03-01T12:00:01Z", outputs={
        "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}})
    ingest(api_client, parent, child)
    for prefix in ("/api/v1", ""):
        response = api_client.get(f"{prefix}/runs/{child['id']}")
        assert response.status_code == 200
        run = response.json()
        assert set(run) == set(EXPORT_FIELDS)
        assert run["parent_run_id"] == parent["id"] and run["parent_run_ids"] == [parent["id"]]
        assert run["trace_id"] == parent["id"] and run["dotted_order"] == child["dotted_order"]
        assert run["status"] == "success" and run["total_tokens"] == 3 and run["is_root"] is False
        assert run["tenant_id"] == str(api_client.workspace.id)
    root = api_client.get(f"/api/v1/runs/{parent['id']}").json()
    assert root["tags"] == ["t1"] and root["extra"] == {"metadata": {"k": "v"}} and root["status"] == "pending"


def test_reading_needs_tracing_read_and_writing_keys_cannot_read(make_client, workspace, api_client):
    [run] = ingest(api_client, run_body())
    writer = make_client(workspace, permissions=["tracing:write"])
    assert writer.get(f"/api/v1/runs/{run['id']}").status_code == 403
    assert writer.get("/api/v1/sessions").status_code == 403
    reader = make_client(workspace, permissions=["tracing:read"])
    assert reader.get(f"/api/v1/runs/{run['id']}").status_code == 200

"""Hostile field values on every ingestion route: each is a 422 naming the run and the field, never a 500.

Also: a run whose id another workspace holds is not stored, and the answer says so instead of counting it.
"""

from __future__ import annotations

import json
import uuid

import orjson
import pytest

from tests.tracing.support_wire import multipart, run_body
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db

PREFIXES = ["", "/api/v1"]


def send(client, route: str, run: dict, prefix: str = ""):
    """Send one run the way `route` carries it; return (response, the loc that names this run)."""
    if route == "batch":
        body = json.dumps({"post": [run_body(name="good"), run]})
        return client.post(f"{prefix}/runs/batch", body, content_type="application/json"), ["body", "post", 1]
    if route == "multipart":
        body, headers = multipart([("post", run_body(name="good")), ("post", run)])
        return client.generic("POST", f"{prefix}/runs/multipart", body, **headers), ["body", f"post.{run['id']}"]
    if route == "post":
        return client.post(f"{prefix}/runs", json.dumps(run), content_type="application/json"), ["body"]
    body = json.dumps({key: value for key, value in run.items() if key != "id"})
    return client.patch(f"{prefix}/runs/{run['id']}", body, content_type="application/json"), ["body"]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("route", ["post", "batch", "multipart", "patch"])
@pytest.mark.parametrize("run_type", [{"kind": "llm"}, ["llm"]], ids=["object", "list"])
def test_a_run_type_that_is_not_a_string_is_422_naming_the_run(api_client, route, prefix, run_type):
    response, loc = send(api_client, route, run_body(run_type=run_type), prefix)
    assert response.status_code == 422, response.content
    assert [error["loc"] for error in response.json()["detail"]] == [[*loc, "run_type"]]
    assert response.json()["detail"][0]["type"] == "enum"
    assert not Run.objects.exists()


WRONG_VALUES = [
    ("name", {"a": 1}, "string_type"),
    ("name", ["a"], "string_type"),
    ("name", 7, "string_type"),
    ("dotted_order", {"a": 1}, "string_type"),
    ("dotted_order", 20260301, "string_type"),
    ("trace_id", ["x"], "uuid_parsing"),
    ("parent_run_id", {"id": 1}, "uuid_parsing"),
    ("reference_example_id", 12, "uuid_parsing"),
    ("tags", [{"a": 1}], "list_type"),
    ("tags", {"a": 1}, "list_type"),
    ("extra", ["a"], "dict_type"),
    ("events", [1, 2], "list_type"),
    ("error", {"a": 1}, "string_type"),
    ("start_time", {"a": 1}, "datetime_type"),
    ("start_time", 1700000000, "datetime_type"),
    ("start_time", "0001-01-01T00:00:00+01:00", "datetime_range"),
    ("end_time", "9999-12-31T23:59:59-01:00", "datetime_range"),
    ("first_token_time", ["2026-01-01"], "datetime_type"),
    ("total_tokens", 2**64, "int_range"),
    ("total_tokens", 1e30, "int_range"),
    ("prompt_tokens", -1.0, "int_range"),
    ("completion_tokens", {"n": 1}, "int_type"),
    ("total_cost", "9999999999.99999999999", "decimal_range"),
    ("total_cost", [1], "decimal_type"),
    ("trace_tier", "t" * 33, "string_too_long"),
    ("trace_tier", 5, "string_type"),
    ("session_name", "p" * 256, "string_too_long"),
    ("session_name", {"a": 1}, "string_type"),
    ("session_id", [1], "uuid_parsing"),
]


@pytest.mark.parametrize(("field", "value", "error_type"), WRONG_VALUES,
                         ids=[f"{field}-{index}" for index, (field, _, _) in enumerate(WRONG_VALUES)])
def test_a_field_of_the_wrong_type_or_out_of_range_is_422_naming_it(api_client, field, value, error_type):
    response, loc = send(api_client, "batch", run_body(**{field: value}))
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == [{"loc": [*loc, field], "msg": response.json()["detail"][0]["msg"],
                                          "type": error_type}]
    assert not Run.objects.exists()


@pytest.mark.parametrize("run_id", [{"a": 1}, ["x"], 5, "not-a-uuid"])
def test_an_id_that_is_not_a_uuid_is_422(api_client, run_id):
    response, loc = send(api_client, "batch", {**run_body(), "id": run_id})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == [*loc, "id"]


def test_huge_token_counts_in_usage_metadata_are_ignored_rather_than_overflowing(api_client):
    llm = run_body(run_type="llm", outputs={"usage_metadata": {"input_tokens": 10**30, "output_tokens": 5}})
    response, _ = send(api_client, "post", llm)
    assert response.status_code == 202
    stored = Run.objects.get(id=llm["id"])
    assert (stored.prompt_tokens, stored.completion_tokens, stored.total_tokens) == (None, 5, 5)


def test_a_run_in_year_one_gets_a_well_formed_dotted_order_and_its_child_is_placed(api_client):
    parent_id, child_id = uuid.uuid4(), uuid.uuid4()
    parent = {"id": str(parent_id), "name": "old", "run_type": "chain", "start_time": "0001-01-01T00:00:00Z"}
    child = {"id": str(child_id), "name": "older", "run_type": "tool", "start_time": "0001-01-01T00:00:01Z",
             "parent_run_id": str(parent_id)}
    response = api_client.post("/runs/batch", orjson.dumps({"post": [parent, child]}), content_type="application/json")
    assert response.status_code == 202, response.content
    assert Run.objects.get(id=child_id).dotted_order == (
        f"00010101T000000000000Z{parent_id}.00010101T000001000000Z{child_id}")


@pytest.mark.parametrize("route", ["post", "batch", "multipart", "patch"])
def test_a_run_id_of_another_workspace_is_not_stored_not_counted_and_named(api_client, outsider_client,
                                                                          other_workspace, workspace, route):
    theirs = run_body(session_name="theirs")
    assert send(outsider_client, "post", theirs)[0].status_code == 202
    missing = run_body(session_name="mine")
    foreign = {**missing, "id": theirs["id"], "trace_id": theirs["trace_id"], "dotted_order": theirs["dotted_order"]}
    foreign_response, _ = send(api_client, route, foreign)
    missing_response, _ = send(api_client, route, missing)
    assert foreign_response.status_code == missing_response.status_code == 202
    kind = "patch" if route == "patch" else "post"
    counted = missing_response.json()[kind]
    assert foreign_response.json()[kind] == counted - 1 and foreign_response.json()["not_stored"] == [theirs["id"]]
    assert missing_response.json()["not_stored"] == []
    stored = Run.objects.get(id=theirs["id"])
    assert stored.workspace == other_workspace and stored.session.name == "theirs" and stored.inputs == theirs["inputs"]
    assert api_client.get(f"/runs/{theirs['id']}").status_code == 404
    assert Run.objects.filter(id=missing["id"], workspace=workspace).exists()


def test_a_patch_of_another_workspaces_run_without_name_gets_the_missing_run_answer(api_client, outsider_client):
    theirs = run_body()
    send(outsider_client, "post", theirs)
    foreign = api_client.patch(f"/runs/{theirs['id']}", {"outputs": {"x": 1}}, format="json")
    missing_id = uuid.uuid4()
    missing = api_client.patch(f"/runs/{missing_id}", {"outputs": {"x": 1}}, format="json")
    assert foreign.status_code == missing.status_code == 422
    assert foreign.json()["detail"][0]["msg"].replace(theirs["id"], "<id>") == \
        missing.json()["detail"][0]["msg"].replace(str(missing_id), "<id>")
    assert "already in use" not in foreign.content.decode()
    assert Run.objects.get(id=theirs["id"]).outputs is None
    assert not TracingProject.objects.filter(workspace=api_client.workspace).exists()

"""One policy for the JSON that enters the service (core/json_input.py): no NUL, no lone surrogate, at most 100
levels of nesting, refused in each route's own shape with the same answer on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from agentruntime.models import ChatThread, StoreItem
from core import json_input

pytestmark = pytest.mark.django_db(transaction=True)
NESTED_OK = "[" * json_input.MAX_DEPTH + "]" * json_input.MAX_DEPTH
NESTED_TOO_DEEP = "[" * (json_input.MAX_DEPTH + 1) + "]" * (json_input.MAX_DEPTH + 1)


def post_raw(client, method: str, path: str, text: str):
    return client.generic(method, path, text, content_type="application/json")


def test_nesting_is_allowed_to_the_limit_and_refused_one_level_past_it():
    assert json_input.loads(NESTED_OK.encode()) is not None
    with pytest.raises(json_input.JsonRefused, match="nested more than 100 levels"):
        json_input.loads(NESTED_TOO_DEEP.encode())
    with pytest.raises(json_input.JsonRefused, match="in a key"):
        json_input.loads(b'{"a\\u0000": 1}')
    # An escaped backslash before "u0000" is text, not a NUL.
    assert json_input.loads(b'{"a": "\\\\u0000"}') == {"a": "\\u0000"}


@pytest.mark.parametrize("body", [
    '{"metadata": {"a": "x\\u0000y"}}',
    '{"metadata": {"a": "\\ud800"}}',
    '{"metadata": {"a": ' + NESTED_TOO_DEEP + '}}',
])
def test_the_agent_server_refuses_nul_lone_surrogates_and_deep_nesting_with_its_422(make_client, workspace, body):
    client = make_client(workspace)
    response = post_raw(client, "POST", "/api/threads", body)
    assert response.status_code == 422 and response.json() == {"detail": "Invalid JSON in request body"}
    assert not ChatThread.objects.exists()


def test_a_store_item_too_deep_to_read_back_is_refused_and_the_store_stays_readable(make_client, workspace):
    client = make_client(workspace)
    deep = '{"namespace": ["a"], "key": "k", "value": {"v": ' + "[" * 600 + "]" * 600 + "}}"
    assert post_raw(client, "PUT", "/api/store/items", deep).status_code == 422
    assert not StoreItem.objects.exists()
    assert client.post("/api/store/items/search", {"namespace_prefix": ["a"]}, format="json").status_code == 200


@pytest.mark.parametrize(("path", "body", "reason"), [
    ("/v2/deployments", '{"name": "x", "source": "internal_source", "source_config": ' + NESTED_TOO_DEEP + "}",
     "nested more than 100 levels"),
    ("/api/v1/bulk-exports/destinations", '{"destination_type": "s3", "display_name": "a\\u0000b", "config": {}, '
     '"credentials": {}}', "NUL character"),
])
def test_rest_routes_refuse_the_same_with_a_fastapi_422_naming_the_reason(make_client, workspace, path, body, reason):
    response = post_raw(make_client(workspace), "POST", path, body)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body"] and error["type"] == "json_invalid" and reason in error["msg"]


def test_a_path_with_a_nul_names_nothing(make_client, workspace):
    client = make_client(workspace)
    assert client.get("/api/threads/abc%00def").status_code == 404
    assert client.delete("/api/threads/abc%00def").json() == {"detail": "Not Found"}


def test_trace_inputs_nested_too_deep_are_refused_and_nothing_is_stored(make_client, workspace):
    from tracing.models import Run

    client = make_client(workspace, permissions=["tracing:write"])
    body = ('{"id": "0f3a0c6e-0f0e-4a53-9d5c-2b1d7e0a5a11", "name": "r", "run_type": "chain", '
            '"start_time": "2026-01-01T00:00:00Z", "inputs": {"x": ' + NESTED_TOO_DEEP + "}}")
    response = post_raw(client, "POST", "/runs", body)
    assert response.status_code == 422 and "nested more than 100 levels" in str(response.json())
    assert not Run.objects.exists()


def test_an_empty_namespace_label_is_a_400_and_the_doc_pages_answer_options_with_405(make_client, workspace):
    client = make_client(workspace)
    response = client.post("/api/store/namespaces", {"prefix": [""]}, format="json")
    assert response.status_code == 400 and "cannot be empty" in response.json()["detail"]
    for page in ("/api/docs", "/api/reference/"):
        response = client.options(page)
        assert response.status_code == 405 and response.json() == {"detail": "Method Not Allowed"}
        assert response["Allow"] == "GET, HEAD"


def test_an_empty_number_in_the_query_is_a_422_as_fastapi_answers_not_the_default(make_client, workspace):
    client = make_client(workspace)
    response = client.get("/api/v1/sessions?limit=&offset=0")
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["query", "limit"], "type": "int_parsing",
                                          "msg": "Input should be a valid integer, unable to parse string as an "
                                                 "integer"}]
    assert client.get("/api/v1/sessions?limit=5").status_code == 200


@pytest.mark.parametrize("minutes", [1e12, 4.7e307])
def test_a_ttl_that_ends_past_the_calendar_is_no_deadline_for_a_thread_or_a_store_item(make_client, workspace,
                                                                                       minutes):
    # langgraph dev accepts both too; the end of such a TTL cannot be written as a date (it overflowed: 500).
    client = make_client(workspace)
    created = client.post("/api/threads", {"ttl": {"strategy": "delete", "ttl": minutes}}, format="json")
    assert created.status_code == 200, created.content
    thread = ChatThread.objects.get(pk=created.json()["thread_id"])
    # PostgreSQL's jsonb writes the number back without its exponent (an int of the same decimal value).
    assert thread.expires_at is None and thread.ttl["strategy"] == "delete" and float(thread.ttl["ttl"]) == minutes
    put = client.put("/api/store/items", {"namespace": ["ttl"], "key": "k", "value": {"v": 1}, "ttl": minutes},
                     format="json")
    assert put.status_code == 204, put.content
    assert StoreItem.objects.get(key="k").expires_at is None
    assert client.get("/api/store/items", {"namespace": "ttl", "key": "k"}).json()["value"] == {"v": 1}

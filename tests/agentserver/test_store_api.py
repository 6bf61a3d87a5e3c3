"""The store routes of the Agent Server API (`/store/items`, `/store/items/search`, `/store/namespaces`) through the
official Python `langgraph_sdk`, sync and async, against the service at {PUBLIC_BASE_URL}/api."""

from __future__ import annotations

import httpx
import pytest

from chat.store import DjangoStore
from tests.agentserver.support_sdk import CLIENT_KINDS, NESTED_SPEC, SdkClient, status_of
from tests.chat.support_chat import live_chat_server

pytestmark = pytest.mark.live
server = live_chat_server(CHAT_GRAPH=NESTED_SPEC, CHAT_ALLOW_ANONYMOUS="false")


@pytest.fixture
def key(server, transactional_db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


@pytest.fixture(params=CLIENT_KINDS)
def client(request, server, key):
    made = SdkClient(request.param, f"{server.url}/api", api_key=key)
    yield made
    made.close()


def call(server, key: str, method: str, path: str, headers: dict | None = None, **kwargs) -> httpx.Response:
    return httpx.request(method, f"{server.url}/api{path}", headers={"X-Api-Key": key, **(headers or {})},
                         timeout=30, **kwargs)


def test_an_item_is_put_read_updated_searched_and_deleted(client):
    assert client.store.put_item(["users", "u1"], "prefs", {"theme": "dark", "size": 3}) is None
    first = client.store.get_item(["users", "u1"], "prefs")
    client.store.put_item(["users", "u1"], "prefs", {"theme": "light", "size": 5})
    client.store.put_item(["users", "u2"], "prefs", {"theme": "dark", "size": 1})
    item = client.store.get_item(["users", "u1"], "prefs")

    assert first["namespace"] == ["users", "u1"] and first["key"] == "prefs"
    assert item["value"] == {"theme": "light", "size": 5}
    assert item["created_at"] == first["created_at"] and item["updated_at"] > first["updated_at"]
    assert client.store.get_item(["users", "u1"], "missing") is None
    found = client.store.search_items(["users"])
    assert [(i["namespace"], i["key"]) for i in found["items"]] == [(["users", "u2"], "prefs"),
                                                                    (["users", "u1"], "prefs")]
    assert all(i["score"] is None for i in found["items"])
    assert [i["namespace"] for i in client.store.search_items(["users"], filter={"theme": "dark"})["items"]] == [
        ["users", "u2"]]
    assert [i["value"]["size"] for i in client.store.search_items(
        ["users"], filter={"size": {"$gt": 2}})["items"]] == [5]
    assert len(client.store.search_items(["users"], limit=1, offset=1, query="ignored")["items"]) == 1

    client.store.delete_item(["users", "u1"], "prefs")
    client.store.delete_item(["users", "u1"], "prefs")  # deleting what is gone is no error
    assert client.store.get_item(["users", "u1"], "prefs") is None


def test_namespaces_are_listed_by_prefix_suffix_and_depth(client):
    for namespace in [["a", "b", "c"], ["a", "b", "f"], ["a", "x", "f"], ["z"]]:
        client.store.put_item(namespace, "k", {"n": 1})

    assert client.store.list_namespaces()["namespaces"] == [["a", "b", "c"], ["a", "b", "f"], ["a", "x", "f"], ["z"]]
    assert client.store.list_namespaces(prefix=["a", "*", "f"])["namespaces"] == [["a", "b", "f"], ["a", "x", "f"]]
    assert client.store.list_namespaces(suffix=["f"], max_depth=2)["namespaces"] == [["a", "b"], ["a", "x"]]
    assert client.store.list_namespaces(limit=1, offset=3)["namespaces"] == [["z"]]


def test_each_workspace_has_a_store_of_its_own_the_one_its_graphs_get(client, server, make_client, workspace,
                                                                        other_workspace):
    client.store.put_item(["notes"], "n1", {"text": "mine"})
    other = SdkClient(client.kind, f"{server.url}/api",
                      api_key=make_client(other_workspace, permissions=["chat:use"]).raw_key)
    try:
        assert other.store.get_item(["notes"], "n1") is None
        assert other.store.search_items([])["items"] == []
        assert other.store.list_namespaces()["namespaces"] == []
        other.store.delete_item(["notes"], "n1")
    finally:
        other.close()
    graphs_store = DjangoStore(scope=f"workspace:{workspace.id}")
    assert graphs_store.get(("notes",), "n1").value == {"text": "mine"}


def test_bad_input_gets_the_agent_servers_statuses(server, key):
    def status(method, path, **kwargs):
        response = call(server, key, method, path, **kwargs)
        return response.status_code, response.json() if response.content else None

    assert status("PUT", "/store/items", json={"namespace": ["a.b"], "key": "k", "value": {}})[0] == 422
    assert status("PUT", "/store/items", json={"namespace": ["a", ""], "key": "k", "value": {}})[0] == 422
    assert status("PUT", "/store/items", json={"namespace": ["a"], "key": "k", "value": [1]})[0] == 422
    assert status("PUT", "/store/items", json={"namespace": ["a"], "key": "k"})[0] == 422
    assert status("PUT", "/store/items", json={"namespace": ["a"], "key": 5, "value": {}})[0] == 422
    assert status("PUT", "/store/items", content=b"xx", headers={"Content-Type": "application/json"})[0] == 422
    assert status("PUT", "/store/items", json={"namespace": [], "key": "k", "value": {}}) == (
        400, {"detail": "Namespace cannot be empty."})
    assert status("PUT", "/store/items", json={"namespace": ["langgraph"], "key": "k", "value": {}})[0] == 400
    assert status("GET", "/store/items", params={"namespace": "a"}) == (400, {"detail": "Key is required"})
    assert status("GET", "/store/items", params={"key": "k"})[0] == 422
    assert status("GET", "/store/items", params={"key": "k", "namespace": "a", "refresh_ttl": "maybe"})[0] == 422
    assert status("POST", "/store/items/search", json={"limit": 0})[0] == 422
    assert status("POST", "/store/items/search", json={"limit": 1001})[0] == 422
    assert status("POST", "/store/items/search", json={"offset": -1})[0] == 422
    assert status("POST", "/store/items/search", json={"filter": {"x": {"$foo": 1}}})[0] == 422
    assert status("POST", "/store/namespaces", json={"max_depth": -1})[0] == 422
    assert status("DELETE", "/store/items", json={"namespace": ["a"]})[0] == 422
    assert status("PATCH", "/store/items", json={})[0] == 405
    assert status("POST", "/store/items/search", json={"namespace_prefix": None}) == (200, {"items": []})
    assert status("POST", "/store/namespaces", json={"max_depth": 0}) == (200, {"namespaces": []})


def test_a_key_without_chat_use_is_403_and_no_key_401(server, transactional_db, make_client, workspace):
    weak = SdkClient("sync", f"{server.url}/api", api_key=make_client(workspace, permissions=["tracing:read"]).raw_key)
    nobody = SdkClient("sync", f"{server.url}/api")
    try:
        assert status_of(lambda: weak.store.put_item(["a"], "k", {}))[0] == 403
        assert status_of(lambda: nobody.store.search_items(["a"]))[0] == 401
        assert status_of(lambda: nobody.store.get_item(["a"], "k"))[0] == 401
    finally:
        weak.close()
        nobody.close()

"""The official Python `langgraph_sdk` (sync and async clients) against the service's own Agent Server API at
{PUBLIC_BASE_URL}/api, serving the test project's nested graph as the deep agent would be served; the store routes
at the end."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from agentruntime.models import ChatThread, StoreItem
from agentruntime.store.django_store import DjangoStore
from tests.agentserver import support_cron_scenarios as cron_scenarios
from tests.agentserver import support_scenarios as scenarios
from tests.agentserver.support_sdk import CLIENT_KINDS, NESTED_SPEC, SdkClient, status_of
from tests.chat.support_chat import command, live_chat_server

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


def test_each_served_graph_has_its_system_assistant(client):
    scenarios.system_assistants(client, ["agent"])


def test_assistants_are_created_versioned_searched_and_deleted(client):
    scenarios.assistant_lifecycle(client, "agent")


def test_an_assistant_shows_its_graph_schemas_and_subgraphs(client):
    scenarios.assistant_graph(client, "agent")


def test_threads_are_created_updated_searched_copied_and_deleted(client):
    scenarios.thread_lifecycle(client)


def test_crons_are_created_read_searched_counted_updated_and_deleted(client, server, key):
    cron_scenarios.cron_lifecycle(client, "agent", f"{server.url}/api", {"X-Api-Key": key})


def test_a_threads_ttl_is_stored_with_the_moment_it_expires(client):
    thread = client.threads.create(ttl={"strategy": "delete", "ttl": 30}, metadata={"k": 1})
    stored = ChatThread.objects.get(pk=thread["thread_id"])
    assert stored.ttl == {"strategy": "delete", "ttl": 30.0} and stored.metadata == {"k": 1}
    assert 29 * 60 < (stored.expires_at - stored.created_at).total_seconds() <= 30 * 60 + 5
    client.threads.update(thread["thread_id"], metadata={"k": 2}, ttl=5)
    stored.refresh_from_db()
    assert stored.ttl == {"strategy": "delete", "ttl": 5.0} and stored.metadata == {"k": 2}


def test_bad_input_gets_the_agent_servers_errors_never_a_500(client, server, key):
    scenarios.bad_input(client, f"{server.url}/api", {"X-Api-Key": key})


def test_another_workspaces_assistants_and_threads_are_404(client, server, make_client, other_workspace):
    assistant = client.assistants.create("agent", name="private")
    thread = client.threads.create(metadata={"private": True})
    other = SdkClient(client.kind, f"{server.url}/api",
                      api_key=make_client(other_workspace, permissions=["chat:use"]).raw_key)
    try:
        assert status_of(lambda: other.assistants.get(assistant["assistant_id"]))[0] == 404
        assert status_of(lambda: other.assistants.delete(assistant["assistant_id"]))[0] == 404
        assert status_of(lambda: other.threads.get(thread["thread_id"]))[0] == 404
        assert status_of(lambda: other.threads.get_state(thread["thread_id"]))[0] == 404
        assert status_of(lambda: other.threads.delete(thread["thread_id"]))[0] == 404
        assert other.threads.search(metadata={"private": True}) == []
        assert other.assistants.search(name="private") == []
        # Ids are global: another workspace cannot take a thread id either.
        assert status_of(lambda: other.threads.create(thread_id=thread["thread_id"]))[0] == 409
    finally:
        other.close()
    assert client.threads.get(thread["thread_id"])["metadata"] == {"private": True}


def test_a_key_without_chat_use_is_403_and_no_key_401(server, transactional_db, make_client, workspace):
    weak = SdkClient("sync", f"{server.url}/api",
                     api_key=make_client(workspace, permissions=["tracing:read"]).raw_key)
    nobody = SdkClient("sync", f"{server.url}/api")
    try:
        assert status_of(lambda: weak.threads.create())[0] == 403
        assert status_of(lambda: nobody.assistants.search())[0] == 401
    finally:
        weak.close()
        nobody.close()


def _wait_idle(client: SdkClient, thread_id: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        thread = client.threads.get(thread_id)
        if thread["status"] != "busy":
            return thread
        time.sleep(0.05)
    raise TimeoutError("the thread stayed busy")


def test_a_thread_made_by_the_sdk_runs_on_the_protocol_and_back(client, server, key):
    headers = {"X-Api-Key": key}
    thread_id = client.threads.create(metadata={"via": "sdk"})["thread_id"]
    started = command(server.url, thread_id, "run.start", {"assistant_id": "agent", "input": {"steps": ["go"]}},
                      headers=headers).json()
    assert started["type"] == "success", started
    thread = _wait_idle(client, thread_id)
    assert thread["status"] == "idle" and thread["values"] == {"steps": ["go", "outer", "go", "outer", "inner"]}
    state = client.threads.get_state(thread_id, subgraphs=True)
    assert state["values"]["steps"][-1] == "inner" and state["next"] == []
    assert len(client.threads.get_history(thread_id, limit=100)) >= 3

    # And a thread the protocol made (run.start on a new id) is an Agent Server thread.
    protocol_thread = str(uuid.uuid4())
    assert command(server.url, protocol_thread, "run.start", {"input": {"steps": []}},
                   headers=headers).json()["type"] == "success"
    assert _wait_idle(client, protocol_thread)["values"]["steps"] == ["outer", "outer", "inner"]
    assert protocol_thread in [t["thread_id"] for t in client.threads.search(limit=100)]
    client.threads.delete(protocol_thread)
    assert not ChatThread.objects.filter(pk=protocol_thread).exists()


def test_history_answers_get_with_query_parameters_and_bodies_over_the_limit_are_413(client, server, key, settings):
    thread_id = client.threads.create(metadata={"graph_id": "agent"})["thread_id"]
    for step in ("a", "b", "c"):
        client.threads.update_state(thread_id, {"steps": [step]}, as_node="__start__")
    headers = {"X-Api-Key": key}
    newest = httpx.get(f"{server.url}/api/threads/{thread_id}/history", params={"limit": 2}, headers=headers).json()
    assert [h["values"]["steps"] for h in newest] == [["a", "b", "c"], ["a", "b"]]
    before = httpx.get(f"{server.url}/api/threads/{thread_id}/history",
                       params={"limit": 5, "before": newest[0]["checkpoint_id"]}, headers=headers).json()
    assert [h["values"]["steps"] for h in before] == [["a", "b"], ["a"]]
    assert httpx.get(f"{server.url}/api/threads/{thread_id}/history", params={"limit": "x"},
                     headers=headers).status_code == 422
    huge = httpx.post(f"{server.url}/api/threads", content=b"{" + b" " * settings.JSON_BODY_MAX_BYTES + b"}",
                      headers={**headers, "Content-Type": "application/json"})
    assert huge.status_code == 413 and "detail" in huge.json()


# --- the store ------------------------------------------------------------------------------------


def call(server, key: str, method: str, path: str, headers: dict | None = None, **kwargs) -> httpx.Response:
    return httpx.request(method, f"{server.url}/api{path}", headers={"X-Api-Key": key, **(headers or {})},
                         timeout=30, **kwargs)


def test_an_item_is_put_read_updated_searched_and_deleted(client):
    scenarios.store_lifecycle(client)


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
    assert status("PUT", "/store/items", json={"namespace": ["a"], "key": "k" * 3000, "value": {}})[0] == 422
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


def test_the_store_refuses_a_key_without_chat_use_and_no_key(server, transactional_db, make_client, workspace):
    weak = SdkClient("sync", f"{server.url}/api", api_key=make_client(workspace, permissions=["tracing:read"]).raw_key)
    nobody = SdkClient("sync", f"{server.url}/api")
    try:
        assert status_of(lambda: weak.store.put_item(["a"], "k", {}))[0] == 403
        assert status_of(lambda: nobody.store.search_items(["a"]))[0] == 401
        assert status_of(lambda: nobody.store.get_item(["a"], "k"))[0] == 401
    finally:
        weak.close()
        nobody.close()


def test_a_put_s_ttl_expires_the_item_and_a_read_with_refresh_ttl_restarts_it(client):
    client.store.put_item(["ttl"], "item", {"v": 1}, ttl=5)
    row = StoreItem.objects.get(namespace="ttl", key="item")
    assert row.ttl_minutes == 5 and row.expires_at > timezone.now() + timedelta(minutes=4)

    StoreItem.objects.filter(pk=row.pk).update(expires_at=timezone.now() + timedelta(minutes=1))
    client.store.get_item(["ttl"], "item", refresh_ttl=False)
    assert StoreItem.objects.get(pk=row.pk).expires_at < timezone.now() + timedelta(minutes=2)
    client.store.get_item(["ttl"], "item", refresh_ttl=True)
    assert StoreItem.objects.get(pk=row.pk).expires_at > timezone.now() + timedelta(minutes=4)

    StoreItem.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.store.get_item(["ttl"], "item") is None
    assert client.store.search_items(["ttl"])["items"] == []

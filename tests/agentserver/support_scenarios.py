"""Scripted runs of every Agent Server operation of this phase through the SDK, shared by the tests against the
service's /api and against a deployed revision. `graph` is a served graph built like the project's `nested_graph`
(outer_step, then the `child` subgraph)."""

from __future__ import annotations

import uuid

import httpx

from agentserver.selectors import system_assistant_id
from tests.agentserver.support_sdk import SdkClient, status_of


def system_assistants(client: SdkClient, graphs: list[str]) -> None:
    found = client.assistants.search(limit=100)
    system = {a["graph_id"]: a for a in found if a["metadata"].get("created_by") == "system"}
    assert set(system) == set(graphs)
    for graph_id, assistant in system.items():
        assert assistant["assistant_id"] == str(system_assistant_id(graph_id))
        assert assistant["name"] == graph_id and assistant["version"] == 1
        # A graph id stands for its system assistant wherever an assistant id is accepted.
        assert client.assistants.get(graph_id)["assistant_id"] == assistant["assistant_id"]
    assert client.assistants.count() == len(found)
    assert status_of(lambda: client.assistants.delete(graphs[0]))[0] == 409


def assistant_lifecycle(client: SdkClient, graph: str) -> None:
    marker = uuid.uuid4().hex
    created = client.assistants.create(graph, context={"model": "m"}, metadata={"team": marker}, name="helper",
                                       description="first")
    aid = created["assistant_id"]
    assert created["graph_id"] == graph and created["version"] == 1 and created["context"] == {"model": "m"}
    assert created["config"] == {"configurable": {"model": "m"}}
    assert status_of(lambda: client.assistants.create(graph, assistant_id=aid)) == (
        409, {"detail": f"Assistant {aid} already exists"})
    assert client.assistants.create(graph, assistant_id=aid, if_exists="do_nothing")["name"] == "helper"

    updated = client.assistants.update(aid, metadata={"stage": "two"}, name="helper 2")
    assert updated["version"] == 2 and updated["metadata"] == {"team": marker, "stage": "two"}
    versions = client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1] and versions[1]["name"] == "helper"
    assert [v["version"] for v in client.assistants.get_versions(aid, metadata={"stage": "two"})] == [2]
    back = client.assistants.set_latest(aid, 1)
    assert (back["version"], back["name"], back["metadata"]) == (1, "helper", {"team": marker})
    assert client.assistants.get(aid)["version"] == 1
    assert status_of(lambda: client.assistants.set_latest(aid, 99))[0] == 404

    assert [a["assistant_id"] for a in client.assistants.search(metadata={"team": marker})] == [aid]
    assert [a["assistant_id"] for a in client.assistants.search(name="helper", graph_id=graph)] == [aid]
    assert client.assistants.search(metadata={"team": marker}, select=["assistant_id", "name"]) == [
        {"assistant_id": aid, "name": "helper"}]
    ordered = client.assistants.search(graph_id=graph, sort_by="created_at", sort_order="asc", limit=100)
    assert ordered[-1]["assistant_id"] == aid
    assert len(client.assistants.search(graph_id=graph, limit=1, offset=1)) == 1
    assert client.assistants.count(metadata={"team": marker}) == 1
    kept = client.threads.create(metadata={"assistant_id": "someone else"})["thread_id"]
    bound = client.threads.create(metadata={"assistant_id": aid})["thread_id"]
    client.assistants.delete(aid, delete_threads=True)
    assert status_of(lambda: client.threads.get(bound))[0] == 404
    client.threads.delete(kept)
    assert status_of(lambda: client.assistants.get(aid)) == (404, {"detail": f"Assistant with ID {aid} not found"})


def assistant_graph(client: SdkClient, graph: str) -> None:
    drawn = client.assistants.get_graph(graph)
    assert [n["id"] for n in drawn["nodes"]] == ["__start__", "outer_step", "child", "__end__"]
    assert {"source": "outer_step", "target": "child"} in drawn["edges"]
    xray = client.assistants.get_graph(graph, xray=True)
    assert "child:inner_step" in [n["id"] for n in xray["nodes"]]
    schemas = client.assistants.get_schemas(graph)
    assert schemas["graph_id"] == graph and schemas["input_schema"]["properties"]["steps"]["type"] == "array"
    assert schemas["state_schema"]["properties"]["steps"]["default"] is None
    subgraphs = client.assistants.get_subgraphs(graph)
    assert list(subgraphs) == ["child"] and subgraphs["child"]["input_schema"]["title"] == "InnerState"
    assert list(client.assistants.get_subgraphs(graph, namespace="child")) == ["child"]
    assert client.assistants.get_subgraphs(graph, namespace="nope") == {}


def thread_lifecycle(client: SdkClient) -> None:
    marker = uuid.uuid4().hex
    thread_id = str(uuid.uuid4())
    created = client.threads.create(thread_id=thread_id, metadata={"team": marker}, ttl=60)
    assert (created["thread_id"], created["status"], created["values"]) == (thread_id, "idle", None)
    assert created["metadata"] == {"team": marker}
    assert status_of(lambda: client.threads.create(thread_id=thread_id)) == (
        409, {"detail": f"Thread with ID {thread_id} already exists"})
    assert client.threads.create(thread_id=thread_id, if_exists="do_nothing")["thread_id"] == thread_id
    empty = client.threads.get_state(thread_id)
    assert empty["values"] == {} and empty["checkpoint"] is None and empty["interrupts"] == []
    assert client.threads.get_history(thread_id) == []

    updated = client.threads.update(thread_id, metadata={"stage": "two"})
    assert updated["metadata"] == {"team": marker, "stage": "two"}
    first = client.threads.update_state(thread_id, {"steps": ["a"]}, as_node="__start__")
    assert first["checkpoint"]["thread_id"] == thread_id and first["checkpoint_id"]
    # As outer_step: the child subgraph is next, so the thread waits (interrupted) with those values.
    client.threads.update_state(thread_id, {"steps": ["b"]}, as_node="outer_step")
    state = client.threads.get_state(thread_id)
    assert state["values"] == {"steps": ["a", "b"]} and state["next"] == ["child"]
    assert state["checkpoint_id"] == state["checkpoint"]["checkpoint_id"] and state["parent_checkpoint_id"]
    thread = client.threads.get(thread_id)
    assert (thread["status"], thread["values"], thread["interrupts"]) == ("interrupted", {"steps": ["a", "b"]}, {})
    assert status_of(lambda: client.threads.update_state(thread_id, {"steps": []}, as_node="nope")) == (
        400, {"detail": "Node nope does not exist"})

    history = client.threads.get_history(thread_id, limit=10)
    assert [h["values"] for h in history][:2] == [{"steps": ["a", "b"]}, {"steps": ["a"]}]
    older = client.threads.get_history(thread_id, limit=1, before=history[0]["checkpoint"])
    assert [h["checkpoint_id"] for h in older] == [history[1]["checkpoint_id"]]
    assert client.threads.get_history(thread_id, metadata={"source": "update"}, limit=10)
    at = client.threads.get_state(thread_id, checkpoint_id=history[1]["checkpoint_id"])
    assert at["values"] == {"steps": ["a"]}
    assert client.threads.get_state(thread_id, checkpoint=history[1]["checkpoint"])["values"] == {"steps": ["a"]}

    found = client.threads.search(metadata={"team": marker})
    assert [t["thread_id"] for t in found] == [thread_id] and found[0]["status"] == "interrupted"
    assert [t["thread_id"] for t in client.threads.search(ids=[thread_id], status="interrupted")] == [thread_id]
    assert client.threads.search(ids=[thread_id], status="idle") == []
    assert [t["thread_id"] for t in client.threads.search(values={"steps": ["a", "b"]}, ids=[thread_id])] == [
        thread_id]
    assert client.threads.search(ids=[thread_id], select=["thread_id", "status"]) == [
        {"thread_id": thread_id, "status": "interrupted"}]
    assert client.threads.count(metadata={"team": marker}) == 1

    copy = client.threads.copy(thread_id)
    assert copy["thread_id"] != thread_id and copy["metadata"]["team"] == marker
    assert client.threads.get_state(copy["thread_id"])["values"] == {"steps": ["a", "b"]}
    client.threads.delete(thread_id)
    gone = {"detail": f"Thread with ID {thread_id} not found"}
    assert status_of(lambda: client.threads.get(thread_id)) == (404, gone)
    assert status_of(lambda: client.threads.get_state(thread_id))[0] == 404
    assert client.threads.count(metadata={"team": marker}) == 1  # the copy


def bad_input(client: SdkClient, base: str, headers: dict) -> None:
    missing = str(uuid.uuid4())
    for call in (lambda: client.assistants.get(missing), lambda: client.threads.get(missing),
                 lambda: client.threads.get_state(missing), lambda: client.threads.get_history(missing),
                 lambda: client.threads.update(missing, metadata={}), lambda: client.threads.delete(missing),
                 lambda: client.threads.copy(missing), lambda: client.assistants.get_graph(missing)):
        assert status_of(call)[0] == 404
    assert status_of(lambda: client.assistants.create("no-such-graph"))[0] == 404
    refused = [
        ("POST", "/assistants", {"name": "no graph"}),
        ("POST", "/assistants/search", {"limit": "x"}),
        ("POST", "/assistants/search", {"sort_by": "bogus"}),
        ("POST", "/threads", {"thread_id": "not-a-uuid"}),
        ("POST", "/threads", {"if_exists": "sometimes"}),
        ("POST", "/threads/search", {"status": "bogus"}),
        ("GET", "/assistants/not-a-uuid", None),
    ]
    with httpx.Client(base_url=base, headers=headers, timeout=30, trust_env=False) as http:
        for method, path, body in refused:
            response = http.request(method, path, json=body)
            assert response.status_code == 422 and isinstance(response.json()["detail"], str), response.text
        broken = http.post("/threads", content=b"{not json", headers={"Content-Type": "application/json"})
        assert broken.status_code == 422 and broken.json() == {"detail": "Invalid JSON in request body"}
        assert http.post("/threads/search", json=[1, 2]).status_code == 422
        assert http.get("/ok").json()["ok"] is True
        info = http.get("/info").json()
        assert info["version"] == "0.16.7" and info["flags"]["assistants"] is True


def runs_lifecycle(client: SdkClient, url: str, key: str | None) -> None:
    """Runs on the test project's graphs: wait, stream (tokens), an interrupt resumed, a cancel, stateless, and the
    same graph through RemoteGraph."""
    thread = client.threads.create()["thread_id"]
    echoed = client.runs.wait(thread, "echo", input={"messages": [{"role": "user", "content": "hi"}]})
    assert echoed["echo"] == "hi"
    parts = client.collect(client.runs.stream(thread, "chat", input={"messages": [{"role": "user",
                                                                                   "content": "one two three"}]},
                                              stream_mode=["messages-tuple", "values"]))
    tokens = [data[0]["content"] for event, data, *_ in parts if event == "messages"]
    assert len(tokens) > 1 and "".join(tokens) == "three two one"
    asked = client.threads.create()["thread_id"]
    interrupted = client.runs.wait(asked, "asker", input={"question": "Ship it?"})
    assert interrupted["__interrupt__"][0]["value"] == {"question": "Ship it?"}
    assert client.threads.get(asked)["status"] == "interrupted"
    resumed = client.runs.wait(asked, "asker", command={"resume": "yes"})
    assert resumed["answer"] == "yes" and client.threads.get(asked)["status"] == "idle"
    slow = client.threads.create()["thread_id"]
    run = client.runs.create(slow, "slow", input={"steps": 50, "delay": 0.1})
    client.runs.cancel(slow, run["run_id"], wait=True)
    assert client.runs.get(slow, run["run_id"])["status"] == "interrupted"
    # A new run with "interrupt" stops the active one (kept, interrupted); with "rollback" the stopped one is gone.
    first = client.runs.create(slow, "slow", input={"steps": 50, "delay": 0.1})
    client.runs.wait(slow, "slow", input={"steps": 1, "delay": 0}, multitask_strategy="interrupt")
    assert client.runs.get(slow, first["run_id"])["status"] == "interrupted"
    doomed = client.runs.create(slow, "slow", input={"steps": 50, "delay": 0.1})
    client.runs.wait(slow, "slow", input={"steps": 1, "delay": 0}, multitask_strategy="rollback")
    assert status_of(lambda: client.runs.get(slow, doomed["run_id"]))[0] == 404
    # interrupt_before stops ahead of a node; a run from an older checkpoint forks the thread there.
    paused = client.runs.wait(slow, "slow", input={"steps": 1, "delay": 0}, interrupt_before=["tick"])
    assert client.threads.get_state(slow)["next"] == ["tick"] and paused is not None
    history = client.threads.get_history(slow, limit=50)
    forked = client.runs.wait(slow, "slow", input=None, checkpoint_id=history[-1]["checkpoint_id"])
    assert forked is not None
    assert client.runs.wait(None, "echo", input={"messages": [{"content": "x"}]})["echo"] == "x"
    from langgraph.pregel.remote import RemoteGraph

    assert RemoteGraph("echo", url=url, api_key=key).invoke({"messages": [{"content": "remote"}]})["echo"] == "remote"


def store_lifecycle(client: SdkClient) -> None:
    """Items put, read, updated, searched (listing order, filters, paging), listed by namespace and deleted, under
    a root namespace of their own."""
    root = f"r{uuid.uuid4().hex}"
    u1, u2 = [root, "users", "u1"], [root, "users", "u2"]
    assert client.store.put_item(u1, "prefs", {"theme": "dark", "size": 3}) is None
    first = client.store.get_item(u1, "prefs")
    client.store.put_item(u1, "prefs", {"theme": "light", "size": 5})
    client.store.put_item(u2, "prefs", {"theme": "dark", "size": 1})
    item = client.store.get_item(u1, "prefs")

    assert first["namespace"] == u1 and first["key"] == "prefs"
    assert item["value"] == {"theme": "light", "size": 5}
    assert item["created_at"] == first["created_at"] and item["updated_at"] > first["updated_at"]
    assert client.store.get_item(u1, "missing") is None
    found = client.store.search_items([root, "users"])["items"]
    assert [(i["namespace"], i["key"]) for i in found] == [(u2, "prefs"), (u1, "prefs")]
    assert all(i["score"] is None for i in found)
    dark = client.store.search_items([root], filter={"theme": "dark"})["items"]
    assert [i["namespace"] for i in dark] == [u2]
    large = client.store.search_items([root], filter={"size": {"$gt": 2}})["items"]
    assert [i["value"]["size"] for i in large] == [5]
    assert len(client.store.search_items([root], limit=1, offset=1, query="ignored")["items"]) == 1
    assert client.store.list_namespaces(prefix=[root])["namespaces"] == [u1, u2]
    assert client.store.list_namespaces(prefix=[root], max_depth=2)["namespaces"] == [[root, "users"]]

    client.store.delete_item(u1, "prefs")
    client.store.delete_item(u1, "prefs")  # deleting what is gone is no error
    assert client.store.get_item(u1, "prefs") is None
    assert client.store.list_namespaces(prefix=[root])["namespaces"] == [u2]

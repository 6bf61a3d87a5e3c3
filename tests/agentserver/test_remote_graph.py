"""LangGraph's `RemoteGraph` against our Agent Server API: invoke, stream in several modes, and as a node of a local
graph, on a thread and without one."""

from __future__ import annotations

import operator
from typing import Annotated

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from typing_extensions import TypedDict

from tests.agentserver.support_sdk import NESTED_SPEC
from tests.chat.support_chat import live_chat_server

pytestmark = pytest.mark.live
server = live_chat_server(CHAT_GRAPH=NESTED_SPEC, CHAT_ALLOW_ANONYMOUS="false")


@pytest.fixture
def remote(server, transactional_db, make_client, workspace):
    key = make_client(workspace, permissions=["chat:use"]).raw_key
    return RemoteGraph("agent", url=f"{server.url}/api", api_key=key)


def test_invoke_answers_the_final_state_without_a_thread_and_on_one(remote):
    assert remote.invoke({"steps": []}) == {"steps": ["outer", "outer", "inner"]}
    client = remote.sync_client
    thread = client.threads.create()
    config = {"configurable": {"thread_id": thread["thread_id"]}}
    assert remote.invoke({"steps": ["a"]}, config)["steps"][-1] == "inner"
    assert remote.get_state(config).values["steps"] == ["a", "outer", "a", "outer", "inner"]


async def test_async_stream_gives_each_requested_mode(remote):
    # Several modes: (mode, chunk) pairs (StreamPart tuples, which also carry the SSE event id).
    parts = [(part[0], part[1]) async for part in remote.astream({"steps": []}, stream_mode=["values", "updates"])]
    modes = [mode for mode, _ in parts]
    assert set(modes) == {"values", "updates"}
    assert [chunk for mode, chunk in parts if mode == "updates"][0] == {"outer_step": {"steps": ["outer"]}}
    assert [chunk for mode, chunk in parts if mode == "values"][-1] == {"steps": ["outer", "outer", "inner"]}


def test_stream_with_subgraphs_names_each_chunks_namespace(remote):
    parts = list(remote.stream({"steps": []}, stream_mode="updates", subgraphs=True))
    namespaces = {namespace for namespace, _ in parts}
    assert () in namespaces and any(ns and ns[0].startswith("child:") for ns in namespaces)


class Outer(TypedDict, total=False):
    steps: Annotated[list, operator.add]


def test_a_remote_graph_runs_as_a_node_of_a_local_graph(remote):
    builder = StateGraph(Outer)
    builder.add_node("local", lambda state: {"steps": ["local"]})
    builder.add_node("remote", remote)
    builder.add_edge(START, "local")
    builder.add_edge("local", "remote")
    builder.add_edge("remote", END)
    result = builder.compile().invoke({"steps": []})
    # The remote graph got ["local"] and answered its whole state, which the local reducer appends.
    assert result["steps"] == ["local", "local", "outer", "local", "outer", "inner"]

"""The deep agent's long-term memory: /memories/ in the owner's store, shared by the owner's threads, never another's;
and the Memory panel's API (GET /api/chat/memories, DELETE /api/chat/memories/{name})."""

from __future__ import annotations

import uuid

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from agentruntime.interrupts import checkpoint_interrupts
from agentruntime.served_graphs import ServedGraph
from chat.agent.graph import build_graph
from chat.agent.memory import Recall, Remember, file_text, listed_paths, memory_request, recalled
from tests.chat.support_chat import live_chat_server, run_to_end

FACT = "remember that my favourite number is 7"
QUESTION = "what is my favourite number?"


@pytest.mark.no_postgres_pass
@pytest.mark.parametrize(("text", "request_"), [
    (FACT, Remember("my favourite number is 7")),
    ("Please remember: I live in Lisbon.", Remember("I live in Lisbon")),
    (QUESTION, Recall("my favourite number")),
    ("Do you remember my favourite colour?", Recall("my favourite colour")),
    ("What do you remember about me?", Recall("")),
    ("What is 6 * 7?", None),
    ("Who wrote Dune?", None),
    ("Research LangGraph streaming", None),
    ("Tell me about Django Channels", None),
    ("How do I stream with LangGraph?", None),
    ("Who am I?", Recall("")),
])
def test_the_scripted_model_tells_memory_requests_from_other_requests(text, request_):
    from chat.agent.planner import find_expressions

    assert memory_request(text, has_arithmetic=bool(find_expressions(text))) == request_


@pytest.mark.no_postgres_pass
def test_a_fact_is_filed_under_its_subject_so_a_new_fact_on_it_replaces_the_old():
    assert Remember("my favourite number is 7").path == "/memories/favourite-number.md"
    assert Remember("My favourite number is 9").path == "/memories/favourite-number.md"
    assert Remember("I like tea").path == "/memories/i-like-tea.md"


@pytest.mark.no_postgres_pass
def test_recall_reads_the_file_tools_answers_and_finds_the_fact_about_the_subject():
    assert listed_paths("['/memories/favourite-number.md', '/memories/sub/']") == ["/memories/favourite-number.md"]
    assert listed_paths("No files found") == []
    text = file_text("@@ lines 1-1 of 1 @@\nmy favourite number is 7.\n")
    assert text == "my favourite number is 7"
    files = {"/memories/favourite-number.md": text, "/memories/i-like-tea.md": "I like tea"}
    assert recalled("my favourite number", files) == ["my favourite number is 7"]
    assert recalled("tea", files) == ["I like tea"]
    assert recalled("my favourite colour", files) == []
    assert sorted(recalled("", files)) == sorted(files.values())


@pytest.fixture
def agent(monkeypatch, settings):
    """The deep agent on an in-memory checkpointer and store, with no approvals unless a run asks for them."""
    monkeypatch.setenv("CHAT_AGENT_DELAY_SCALE", "0")
    settings.CHAT_APPROVE_TOOLS = []
    store = InMemoryStore()
    graph = build_graph(InMemorySaver()).copy(update={"store": store})
    return ServedGraph(spec="chat.agent.graph:build_graph", graph=graph), store


async def reply(graph, config: dict) -> str:
    state = await graph.aget_state(config)
    return " ".join(b["text"] for b in state.values["messages"][-1].content if b.get("type") == "text")


@pytest.mark.no_postgres_pass
@pytest.mark.parametrize(("decision", "expected", "saved"), [
    ({"type": "reject", "message": "not now"},
     "I did not use my memory (write_file on /memories/): you rejected the call (not now).", []),
    ({"type": "edit", "edited_action": {"name": "write_file", "args": {
        "file_path": "/memories/number.md", "content": "my favourite number is 8\n"}}},
     "I saved it in `/memories/number.md`", ["/number.md"]),
])
async def test_a_person_reviewing_the_memory_write_decides_what_is_saved_and_the_answer_says_so(
        agent, decision, expected, saved):
    served, store = agent
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "approve_tools": ["write_file"]}}
    await served.graph.ainvoke({"messages": [HumanMessage(FACT)]}, config)
    [(key, (value, _namespace))] = (await checkpoint_interrupts(served, config["configurable"]["thread_id"])).items()
    assert value["action_requests"][0]["args"]["file_path"] == "/memories/favourite-number.md"
    await served.graph.ainvoke(Command(resume={key: {"decisions": [decision]}}), config)
    assert expected in await reply(served.graph, config)
    assert [item.key for item in await store.asearch(("memories",))] == saved


@pytest.mark.no_postgres_pass
async def test_a_graph_run_without_a_store_keeps_its_memory_in_the_process_instead_of_failing(monkeypatch):
    monkeypatch.setenv("CHAT_AGENT_DELAY_SCALE", "0")
    graph = build_graph(InMemorySaver())
    for text in (FACT, QUESTION):
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        await graph.ainvoke({"messages": [HumanMessage(text)]}, config)
    assert "From my memory: your favourite number is 7." in await reply(graph, config)


# --- through a live server -------------------------------------------------------------------------------------------

chat_server = live_chat_server()


@pytest.fixture
def owners(base, make_client, workspace, other_workspace):
    """Headers of two API keys of two workspaces, and of a logged-in user's session."""
    user = get_user_model().objects.create_user(username="memory-user", password="pw-not-used")
    client = DjangoClient()
    client.force_login(user)
    return {
        "a": {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key},
        "b": {"X-Api-Key": make_client(other_workspace, permissions=["chat:use"]).raw_key},
        "user": {"Cookie": f"sessionid={client.cookies['sessionid'].value}", "Origin": base},
    }


def answer(base: str, text: str, headers: dict) -> str:
    """The agent's final answer to `text` in a new thread of the caller."""
    thread = str(uuid.uuid4())
    run_to_end(base, thread, text, headers=headers)
    content = httpx.get(f"{base}/api/threads/{thread}/state", headers=headers).json()["values"]["messages"][-1][
        "content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("text"))


def memories(base: str, headers: dict) -> list[dict]:
    response = httpx.get(f"{base}/api/chat/memories", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["entries"]


@pytest.mark.live
def test_a_fact_remembered_in_one_thread_is_known_in_the_owners_next_thread_and_never_to_another_owner(base, owners):
    assert "7" not in answer(base, QUESTION, owners["a"])
    saved = answer(base, FACT, owners["a"])
    assert "your favourite number is 7" in saved and "/memories/favourite-number.md" in saved
    assert "your favourite number is 7" in answer(base, QUESTION, owners["a"])
    other = answer(base, QUESTION, owners["b"])
    assert "7" not in other and "don't remember" in other
    # The memory is an item of the owner's store, as the Agent Server's /store routes show it.
    item = httpx.get(f"{base}/api/store/items", params={"namespace": "memories", "key": "/favourite-number.md"},
                     headers=owners["a"]).json()
    assert item["value"]["content"] == "my favourite number is 7\n"
    assert httpx.get(f"{base}/api/store/items", params={"namespace": "memories", "key": "/favourite-number.md"},
                     headers=owners["b"]).json() is None


@pytest.mark.live
def test_the_memory_api_lists_the_owners_entries_and_deleting_one_makes_the_agent_forget_it(base, owners):
    assert "/memories/favourite-number.md" in answer(base, FACT, owners["user"])
    [entry] = memories(base, owners["user"])
    assert entry["name"] == "favourite-number.md" and entry["path"] == "/memories/favourite-number.md"
    assert entry["content"] == "my favourite number is 7\n" and entry["created_at"] and entry["updated_at"]
    assert memories(base, owners["a"]) == [] and memories(base, owners["b"]) == []
    # Another owner cannot delete it: the same 404 as a memory nobody has.
    for headers, name in [(owners["b"], "favourite-number.md"), (owners["user"], "unknown.md")]:
        response = httpx.delete(f"{base}/api/chat/memories/{name}", headers=headers)
        assert response.status_code == 404 and response.json() == {"detail": f"No memory named '{name}'."}
    assert httpx.delete(f"{base}/api/chat/memories/favourite-number.md", headers=owners["user"]).status_code == 204
    assert memories(base, owners["user"]) == []
    assert "7" not in answer(base, QUESTION, owners["user"])


@pytest.mark.live
def test_only_files_under_memories_are_entries_and_other_store_items_cannot_be_deleted_through_it(base, owners):
    for namespace in (["notes"], ["memories", "sub"]):
        put = httpx.put(f"{base}/api/store/items", json={"namespace": namespace, "key": "/x.md",
                                                         "value": {"content": "not a memory"}}, headers=owners["a"])
        assert put.status_code == 204, put.text
    assert memories(base, owners["a"]) == []
    assert httpx.delete(f"{base}/api/chat/memories/x.md", headers=owners["a"]).status_code == 404
    assert httpx.get(f"{base}/api/store/items", params={"namespace": "notes", "key": "/x.md"},
                     headers=owners["a"]).json()["value"] == {"content": "not a memory"}


@pytest.mark.live
@pytest.mark.parametrize("name", ["a//b.md", "%01.md", "x" * 1025, "sub/%2E%2E/x.md"])
def test_a_name_that_can_name_no_memory_file_is_a_422(base, owners, name):
    response = httpx.delete(f"{base}/api/chat/memories/{name}", headers=owners["a"])
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["path", "name"]


@pytest.mark.live
def test_the_memory_api_refuses_callers_the_chat_refuses(base, owners):
    assert httpx.get(f"{base}/api/chat/memories", headers={"X-Api-Key": "wrong"}).status_code == 401
    # A cookie-authenticated delete must come from this site.
    cross_site = {**owners["user"], "Origin": "https://elsewhere.example"}
    response = httpx.delete(f"{base}/api/chat/memories/favourite-number.md", headers=cross_site)
    assert response.status_code == 403 and "Cross-origin" in response.json()["detail"]
    assert httpx.post(f"{base}/api/chat/memories", headers=owners["a"]).status_code == 405

"""DjangoCheckpointSaver under a real LangGraph graph (no model needed), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import ormsgpack
import pytest
from django.core.exceptions import SynchronousOnlyOperation
from django.db import connection, connections
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_POS_ARGS
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from agentruntime.checkpointer.saver import DjangoCheckpointSaver, get_checkpointer
from agentruntime.models import Checkpoint, CheckpointBlob, CheckpointWrite

# The async methods run on the saver's own threads and connections: they only see committed data.
pytestmark = pytest.mark.django_db(transaction=True)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    topics: Annotated[list[str], operator.add]


def answer(state: State) -> dict:
    said = state["messages"][-1].content
    return {"messages": [AIMessage(f"echo: {said}")], "turns": state.get("turns", 0) + 1}


def remember(state: State) -> dict:
    return {"topics": [state["messages"][-2].content.split()[0]]}


def build_graph(checkpointer):
    graph = StateGraph(State)
    graph.add_node(answer)
    graph.add_node(remember)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", "remember")
    graph.add_edge("remember", END)
    return graph.compile(checkpointer=checkpointer)


def thread(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


async def say(graph, thread_id: str, text: str) -> dict:
    return await graph.ainvoke({"messages": [HumanMessage(text)]}, thread(thread_id))


def contents(state) -> list[str]:
    return [message.content for message in state.values["messages"]]


def rows_of(thread_id: str) -> dict[str, int]:
    return {
        model.__name__: model.objects.filter(thread_id=thread_id).count()
        for model in (Checkpoint, CheckpointBlob, CheckpointWrite)
    }


async def in_thread(fn, *args):
    """Run sync code on another thread, as a sync service would, closing its connection afterwards."""

    def call():
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(call)


async def test_a_thread_survives_a_restart(saver):
    await say(build_graph(saver), "t-restart", "hello there")
    saver.close()

    restarted = DjangoCheckpointSaver()
    try:
        graph = build_graph(restarted)
        state = await graph.aget_state(thread("t-restart"))
        assert contents(state) == ["hello there", "echo: hello there"]

        await say(graph, "t-restart", "second turn")
        state = await graph.aget_state(thread("t-restart"))
        assert contents(state)[-1] == "echo: second turn"
        assert state.values["turns"] == 2
        assert state.values["topics"] == ["hello", "second"]
    finally:
        restarted.close()


async def test_history_is_newest_first(saver):
    graph = build_graph(saver)
    await say(graph, "t-history", "one")
    await say(graph, "t-history", "two")

    history = [state async for state in graph.aget_state_history(thread("t-history"))]

    assert [state.metadata["step"] for state in history] == [6, 5, 4, 3, 2, 1, 0, -1]
    ids = [state.config["configurable"]["checkpoint_id"] for state in history]
    assert ids == sorted(ids, reverse=True)
    parents = [state.parent_config["configurable"]["checkpoint_id"] for state in history[:-1]]
    assert parents == ids[1:]
    assert history[0].values["turns"] == 2 and history[-1].values == {"messages": [], "topics": []}
    limited = [state async for state in graph.aget_state_history(thread("t-history"), limit=2)]
    assert [state.metadata["step"] for state in limited] == [6, 5]


async def test_a_run_forks_from_an_earlier_checkpoint(saver):
    graph = build_graph(saver)
    await say(graph, "t-fork", "hello there")
    await say(graph, "t-fork", "second turn")
    history = [state async for state in graph.aget_state_history(thread("t-fork"))]
    after_first_turn = next(state for state in history if state.values.get("turns") == 1 and not state.next)

    await graph.ainvoke({"messages": [HumanMessage("another road")]}, after_first_turn.config)

    # Both branches moved the same channels on from the same versions; each keeps its own values.
    state = await graph.aget_state(thread("t-fork"))
    assert contents(state) == ["hello there", "echo: hello there", "another road", "echo: another road"]
    assert state.values["topics"] == ["hello", "another"]
    first_of_fork = [s async for s in graph.aget_state_history(thread("t-fork"))][-1 - len(history)]
    assert (
        first_of_fork.parent_config["configurable"]["checkpoint_id"]
        == after_first_turn.config["configurable"]["checkpoint_id"]
    )
    old_branch = await graph.aget_state(history[0].config)
    assert contents(old_branch)[-1] == "echo: second turn"


async def test_deleting_a_thread_removes_everything_of_it_only(saver):
    graph = build_graph(saver)
    await say(graph, "t-doomed", "hello there")
    await say(graph, "t-kept", "hello there")
    before = await in_thread(rows_of, "t-doomed")
    kept = await in_thread(rows_of, "t-kept")
    assert all(before.values()) and all(kept.values())

    await saver.adelete_thread("t-doomed")

    assert await in_thread(rows_of, "t-doomed") == {"Checkpoint": 0, "CheckpointBlob": 0, "CheckpointWrite": 0}
    assert await in_thread(rows_of, "t-kept") == kept
    assert (await graph.aget_state(thread("t-doomed"))).values == {}
    assert contents(await graph.aget_state(thread("t-kept")))[-1] == "echo: hello there"


async def test_sync_calls_from_worker_threads_see_what_async_calls_wrote(saver):
    # The chat server runs graphs in Daphne's loop and reads state from sync services on threads.
    await say(build_graph(saver), "t-mixed", "hello there")

    latest = await in_thread(saver.get_tuple, thread("t-mixed"))
    listed = await in_thread(lambda: list(saver.list(thread("t-mixed"))))

    assert latest.checkpoint["channel_values"]["turns"] == 1
    assert [t.config for t in listed][0] == latest.config
    await in_thread(build_graph(saver).invoke, {"messages": [HumanMessage("sync turn")]}, thread("t-mixed"))
    assert (await saver.aget_tuple(thread("t-mixed"))).checkpoint["channel_values"]["turns"] == 2


async def test_async_calls_from_several_event_loops_at_once_all_complete(saver):
    await say(build_graph(saver), "t-loops", "hello there")

    async def read_many():
        return [(await saver.aget_tuple(thread("t-loops"))).checkpoint["channel_values"]["turns"] for _ in range(20)]

    here, elsewhere = await asyncio.gather(read_many(), asyncio.to_thread(asyncio.run, read_many()))

    assert here == elsewhere == [1] * 20


async def test_a_sync_call_inside_the_event_loop_fails_at_once_instead_of_blocking_it(saver):
    with pytest.raises(SynchronousOnlyOperation):
        saver.get_tuple(thread("t-anything"))


async def test_resuming_after_a_failed_step_reruns_only_the_node_that_failed(saver):
    runs = {"steady": 0, "flaky": 0}
    steady_done = asyncio.Event()

    async def steady(state: State) -> dict:
        runs["steady"] += 1
        steady_done.set()
        return {"topics": ["steady"]}

    async def flaky(state: State) -> dict:
        runs["flaky"] += 1
        if runs["flaky"] == 1:
            # Fail only once the sibling has finished, so that its writes are the ones at stake.
            await steady_done.wait()
            await asyncio.sleep(0.05)
            raise RuntimeError("the process died here")
        return {"topics": ["flaky"]}

    graph = StateGraph(State)
    graph.add_node(steady)
    graph.add_node(flaky)
    graph.add_edge(START, "steady")
    graph.add_edge(START, "flaky")
    graph = graph.compile(checkpointer=saver)
    with pytest.raises(RuntimeError):
        await graph.ainvoke({"messages": [HumanMessage("go")]}, thread("t-resume"), durability="sync")

    # A new saver, as after a restart: the sibling's write was stored, so only the failed node runs.
    restarted = DjangoCheckpointSaver()
    try:
        result = await graph.copy(update={"checkpointer": restarted}).ainvoke(None, thread("t-resume"))
    finally:
        restarted.close()

    assert runs == {"steady": 1, "flaky": 2}
    assert sorted(result["topics"]) == ["flaky", "steady"]


async def test_parallel_writes_are_stored_exactly_once(saver):
    config = await saver.aput(
        {"configurable": {"thread_id": "t-writes", "checkpoint_ns": ""}},
        {"v": 4, "id": "1f0-writes", "ts": "", "channel_values": {}, "channel_versions": {}, "versions_seen": {}},
        {"source": "loop", "step": 0},
        {},
    )
    tasks = [f"task-{n}" for n in range(100)]
    calls = [saver.aput_writes(config, [("a", n), ("b", [n])], task) for n, task in enumerate(tasks)]
    calls += [saver.aput_writes(config, [("a", n), ("b", [n])], task) for n, task in enumerate(tasks[:50])]

    await asyncio.gather(*calls)

    writes = (await saver.aget_tuple(config)).pending_writes
    assert len(writes) == 200
    assert sorted((task, channel) for task, channel, _ in writes) == sorted(
        (task, channel) for task in tasks for channel in ("a", "b")
    )


async def test_an_error_write_replaces_the_previous_one(saver):
    from langgraph.checkpoint.serde.types import ERROR

    config = await saver.aput(
        {"configurable": {"thread_id": "t-error", "checkpoint_ns": ""}},
        {"v": 4, "id": "1f0-error", "ts": "", "channel_values": {}, "channel_versions": {}, "versions_seen": {}},
        {"source": "loop", "step": 0},
        {},
    )
    await saver.aput_writes(config, [(ERROR, "first failure")], "task")
    await saver.aput_writes(config, [(ERROR, "retry failed too")], "task")

    assert (await saver.aget_tuple(config)).pending_writes == [("task", ERROR, "retry failed too")]


async def test_metadata_filters_take_any_key_safely(saver):
    base = {"configurable": {"thread_id": "t-meta", "checkpoint_ns": ""}}
    odd_key = "a') OR 1=1 --"
    for n, meta in enumerate([{"user__name": "ann", odd_key: 1, "tags": {"x": [1]}}, {"user__name": "bob"}]):
        checkpoint = {"v": 4, "id": f"1f0-meta-{n}", "ts": "", "channel_values": {}, "channel_versions": {}}
        await saver.aput(base, {**checkpoint, "versions_seen": {}}, {"source": "loop", "step": n, **meta}, {})

    async def matching(**filter_):
        return [t.metadata["step"] async for t in saver.alist(base, filter=filter_)]

    assert await matching(user__name="ann") == [0]
    assert await matching(**{odd_key: 1}) == [0]
    assert await matching(tags={"x": [1]}) == [0]
    assert await matching(user__name="nobody") == []
    assert [t.metadata["step"] async for t in saver.alist(None, filter={"user__name": "bob"})] == [1]


async def test_keep_latest_drops_finished_subgraph_calls_and_the_graph_goes_on(saver):
    inner = StateGraph(State)
    inner.add_node("inner", lambda state: {"topics": ["inner"]})
    inner.add_edge(START, "inner")
    inner = inner.compile()

    async def call(state: State) -> dict:
        result = await inner.ainvoke({"messages": [], "topics": []})
        return {"topics": result["topics"], "messages": [AIMessage("called")]}

    outer = StateGraph(State)
    outer.add_node("call", call)
    outer.add_edge(START, "call")
    graph = outer.compile(checkpointer=saver)
    await say(graph, "t-prune", "one")
    await say(graph, "t-prune", "two")
    namespaces = await in_thread(
        lambda: set(Checkpoint.objects.filter(thread_id="t-prune").values_list("checkpoint_ns", flat=True))
    )
    assert len(namespaces) == 3  # the root and one namespace per subgraph call

    await saver.aprune(["t-prune"])

    left = await in_thread(
        lambda: list(
            Checkpoint.objects.filter(thread_id="t-prune").values_list("checkpoint_ns", "parent_checkpoint_id")
        )
    )
    assert left == [("", None)]
    state = await graph.aget_state(thread("t-prune"))
    assert contents(state) == ["one", "called", "two", "called"]
    await say(graph, "t-prune", "three")
    assert (await graph.aget_state(thread("t-prune"))).values["topics"] == ["inner"] * 3


@pytest.mark.skipif(connection.vendor != "postgresql", reason="no server closes an SQLite connection")
async def test_a_connection_the_server_dropped_is_replaced_without_failing_a_call(saver):
    graph = build_graph(saver)
    await say(graph, "t-dropped", "hello there")

    def drop_other_sessions():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return len(cursor.fetchall())

    assert await in_thread(drop_other_sessions) >= 1

    assert contents(await graph.aget_state(thread("t-dropped"))) == ["hello there", "echo: hello there"]
    await say(graph, "t-dropped", "second turn")
    assert (await graph.aget_state(thread("t-dropped"))).values["turns"] == 2


async def test_strict_msgpack_refuses_a_tampered_blob(saver, tmp_path):
    assert _msgpack.STRICT_MSGPACK_ENABLED
    marker = tmp_path / "constructed"
    await say(build_graph(saver), "t-tamper", "hello there")
    # Someone with write access to the table swaps a channel value for a constructor call.
    payload = ormsgpack.packb(
        ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb(["os", "system", [f"touch {marker}"]]))
    )
    await in_thread(
        lambda: CheckpointBlob.objects.filter(thread_id="t-tamper", channel="topics").update(
            type="msgpack", blob=payload
        )
    )

    loaded = await saver.aget_tuple(thread("t-tamper"))

    assert loaded.checkpoint["channel_values"]["topics"] == [f"touch {marker}"]
    assert not marker.exists()


async def test_the_process_wide_checkpointer_is_one_instance():
    first = get_checkpointer()
    try:
        assert get_checkpointer() is first
        assert await in_thread(get_checkpointer) is first
    finally:
        first.close()

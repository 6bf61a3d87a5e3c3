"""DjangoCheckpointSaver's DeltaChannel history against LangGraph's reference walk, on SQLite and PostgreSQL.

The reference is `BaseCheckpointSaver.get_delta_channel_history`, which walks the parent chain with
one `get_tuple` per ancestor; ours must give the same result for every checkpoint of real threads.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph

from agentruntime.checkpointer.history import delta_channel_history
from agentruntime.checkpointer.saver import DjangoCheckpointSaver
from tests.agentruntime.test_checkpointer import in_thread

# Graphs run on the saver's own threads and connections (async methods): they only see committed data.
pytestmark = pytest.mark.django_db(transaction=True)


def extend(state: list, writes: list) -> list:
    return [*state, *(item for write in writes for item in write)]


def add(state: int, writes: list) -> int:
    return state + sum(writes)


class DeltaState(TypedDict, total=False):
    items: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]
    count: Annotated[int, DeltaChannel(add, snapshot_frequency=4)]
    never: Annotated[list[str], DeltaChannel(extend)]


class PlainState(TypedDict, total=False):
    """The same keys before they became DeltaChannels: the list is stored as a blob, the int inline."""

    items: Annotated[list[str], operator.add]
    count: Annotated[int, operator.add]


def build_graph(state: type, checkpointer):
    def first(state: dict) -> dict:
        return {"items": [f"first-{state.get('count', 0)}"], "count": 1}

    def second(state: dict) -> dict:
        return {"items": ["second"]}

    def third(state: dict) -> dict:
        return {"count": 2}

    graph = StateGraph(state)
    graph.add_node(first)
    graph.add_node(second)
    graph.add_node(third)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    # Two tasks in one step: their writes to `items` and `count` must keep LangGraph's order.
    graph.add_edge("first", "third")
    return graph.compile(checkpointer=checkpointer)


def thread(thread_id: str, checkpoint_id: str | None = None) -> dict:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}




def compare_with_the_reference_walk(saver: DjangoCheckpointSaver, thread_id: str, channels: list[str]) -> list:
    """Compare every checkpoint's history, with the default pages and with pages of two and three rows."""
    results = []
    for checkpoint in saver.list(thread(thread_id)):
        config = checkpoint.config
        expected = BaseCheckpointSaver.get_delta_channel_history(saver, config=config, channels=channels)
        assert saver.get_delta_channel_history(config=config, channels=channels) == expected
        small_pages = delta_channel_history(saver._store, saver.serde, config, channels, pages=(2, 3))
        assert small_pages == expected
        results.append(expected)
    return results


async def test_every_checkpoint_of_a_forked_thread_has_the_reference_history(saver):
    graph = build_graph(DeltaState, saver)
    for _ in range(4):
        await graph.ainvoke({"items": ["user"]}, thread("t-fork"))
    early = [c async for c in saver.alist(thread("t-fork"))][-4].config["configurable"]["checkpoint_id"]
    for _ in range(2):
        await graph.ainvoke({"items": ["fork"]}, thread("t-fork", early))

    results = await in_thread(compare_with_the_reference_walk, saver, "t-fork", ["items", "count", "never"])

    # The thread has seeds in snapshot blobs, chains longer than a small page and a channel never written.
    assert any("seed" in result["items"] for result in results)
    assert max(len(result[channel]["writes"]) for result in results for channel in ("items", "count")) > 3
    assert all(result["never"] == {"writes": []} for result in results)


async def test_a_thread_from_before_the_delta_channels_seeds_from_its_plain_values(saver):
    await build_graph(PlainState, saver).ainvoke({"items": ["old"], "count": 5}, thread("t-migrated"))
    graph = build_graph(DeltaState, saver)
    await graph.ainvoke({"items": ["new"]}, thread("t-migrated"))

    results = await in_thread(compare_with_the_reference_walk, saver, "t-migrated", ["items", "count"])

    seeds = [entry["seed"] for result in results for entry in result.values() if "seed" in entry]
    assert any(isinstance(seed, int) for seed in seeds)  # stored inline in the checkpoint row
    assert any(isinstance(seed, list) for seed in seeds)  # stored as a blob
    assert (await graph.aget_state(thread("t-migrated"))).values["count"] == 5 + 3 + 3


async def test_the_latest_checkpoint_is_walked_without_an_id_and_a_missing_one_has_no_history(saver):
    await build_graph(DeltaState, saver).ainvoke({"items": ["user"]}, thread("t-latest"))
    latest = (await saver.aget_tuple(thread("t-latest"))).config

    async def history(config: dict, channels: list[str]):
        return await saver.aget_delta_channel_history(config=config, channels=channels)

    assert await history(thread("t-latest"), ["items"]) == await history(latest, ["items"])
    assert (await history(latest, ["items"]))["items"]["writes"]
    assert await history(thread("t-latest", "no-such-id"), ["items"]) == {"items": {"writes": []}}
    assert await history(thread("t-none"), ["items"]) == {"items": {"writes": []}}
    assert await history(latest, []) == {}


async def test_a_graph_rebuilds_its_delta_channels_through_the_async_saver(saver):
    graph = build_graph(DeltaState, saver)
    for turn in range(5):
        await graph.ainvoke({"items": [f"user-{turn}"]}, thread("t-async"))

    state = await graph.aget_state(thread("t-async"))

    assert state.values["count"] == 5 * 3
    assert state.values["items"][:4] == ["user-0", "first-0", "second", "user-1"]
    assert len(state.values["items"]) == 5 * 3

"""The state a protocol command reads (`state.get`, `state.listCheckpoints`), through the served graph and its
checkpointer. The Agent Server's `ThreadState` (GET /state, /history) is agentserver/state.py's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentruntime.selectors import ServedGraph


class NoSuchNamespace(LookupError):
    pass


def _checkpoint_ref(config: Mapping[str, Any] | None, thread_id: str) -> dict | None:
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("checkpoint_id"):
        return None
    return {"thread_id": configurable.get("thread_id", thread_id), "checkpoint_id": configurable["checkpoint_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_map": configurable.get("checkpoint_map")}


def _config(thread_id: str, **extra: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, **{k: v for k, v in extra.items() if v is not None}}}


async def namespace_state(served: ServedGraph, thread_id: str, namespace: list[str], keys: list[str] | None) -> dict:
    """`state.get`: the values (optionally only `keys`) and checkpoint of the root or of a subgraph namespace.

    Raises:
        NoSuchNamespace: nothing was checkpointed under `namespace`.
    """
    if not namespace:
        snapshot = await served.graph.aget_state(_config(thread_id))
        ref = _checkpoint_ref(snapshot.config, thread_id)
        values = snapshot.values or {}
    else:
        ns = "|".join(namespace)
        found = await served.saver.aget_tuple(_config(thread_id, checkpoint_ns=ns))
        if found is None:
            raise NoSuchNamespace(f"No state under namespace {namespace}.")
        ref = _checkpoint_ref(found.config, thread_id)
        values = found.checkpoint.get("channel_values") or {}
    if keys:
        values = {k: v for k, v in values.items() if k in keys}
    result = {"values": values}
    if ref:
        result["checkpoint"] = {"id": ref["checkpoint_id"], "ns": ref["checkpoint_ns"]}
    return result


async def namespace_checkpoints(served: ServedGraph, thread_id: str, namespace: list[str], *, limit: int | None,
                                before: str | None) -> list[dict]:
    """`state.listCheckpoints`: checkpoints of a namespace, newest first."""
    config = _config(thread_id, checkpoint_ns="|".join(namespace))
    found = []
    async for item in served.saver.alist(
            config, before=_config(thread_id, checkpoint_id=before) if before else None, limit=limit):
        metadata = dict(item.metadata or {})
        found.append({"id": item.config["configurable"]["checkpoint_id"], "timestamp": item.checkpoint.get("ts"),
                      "step": metadata.get("step"), "metadata": metadata})
    return found

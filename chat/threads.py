"""Thread state in the LangGraph SDK's wire shape (`ThreadState`, agent-streaming-protocol.md §8), read and written
through the served graph and its checkpointer."""

from __future__ import annotations

from typing import Any

from langgraph.errors import InvalidUpdateError

from chat.graph_runtime import ServedGraph


class InvalidStateUpdate(ValueError):
    pass


class NoSuchNamespace(LookupError):
    pass


def _checkpoint_ref(config: dict | None, thread_id: str) -> dict | None:
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("checkpoint_id"):
        return None
    return {"thread_id": configurable.get("thread_id", thread_id), "checkpoint_id": configurable["checkpoint_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_map": configurable.get("checkpoint_map")}


def _task(task: Any, thread_id: str) -> dict:
    state = task.state
    checkpoint = _checkpoint_ref(state, thread_id) if isinstance(state, dict) else None
    if isinstance(state, dict) and checkpoint is None and (state.get("configurable") or {}).get("checkpoint_ns"):
        configurable = state["configurable"]
        checkpoint = {"thread_id": thread_id, "checkpoint_id": None, "checkpoint_ns": configurable["checkpoint_ns"],
                      "checkpoint_map": configurable.get("checkpoint_map")}
    return {
        "id": task.id,
        "name": task.name,
        "error": None if task.error is None else f"{type(task.error).__name__}: {task.error}",
        "interrupts": [{"value": i.value, "id": getattr(i, "id", None)} for i in task.interrupts or ()],
        # e.g. ["__pregel_push", 0, false]: how the client maps a subagent's tool call to its namespace.
        "path": list(task.path) if task.path is not None else None,
        "checkpoint": checkpoint,
        "state": None,
        "result": task.result,
    }


def thread_state_from_snapshot(snapshot: Any, thread_id: str) -> dict:
    """A `StateSnapshot` as the SDK's `ThreadState`."""
    created_at = snapshot.created_at
    return {
        "values": snapshot.values or {},
        "next": list(snapshot.next or ()),
        "tasks": [_task(task, thread_id) for task in snapshot.tasks or ()],
        "checkpoint": _checkpoint_ref(snapshot.config, thread_id),
        "metadata": dict(snapshot.metadata or {}),
        "created_at": created_at if isinstance(created_at, str) or created_at is None else created_at.isoformat(),
        "parent_checkpoint": _checkpoint_ref(snapshot.parent_config, thread_id),
    }


def _config(thread_id: str, **extra: Any) -> dict:
    return {"configurable": {"thread_id": thread_id, **{k: v for k, v in extra.items() if v is not None}}}


async def thread_state_get(served: ServedGraph, thread_id: str) -> dict | None:
    """The thread's current state, or None when it has no checkpoint yet."""
    snapshot = await served.graph.aget_state(_config(thread_id))
    if not (snapshot.config.get("configurable") or {}).get("checkpoint_id"):
        return None
    return thread_state_from_snapshot(snapshot, thread_id)


async def thread_state_update(served: ServedGraph, thread_id: str, *, values: Any, checkpoint: dict | None,
                              checkpoint_id: str | None, as_node: str | None) -> dict:
    """Bootstrap or update the state (as the examples' `updateThreadState` does) and return the new state.

    Raises:
        InvalidStateUpdate: the update does not fit the graph (unknown node, bad values, unknown checkpoint).
    """
    if values is None:
        values = {"messages": []}
    target = dict(checkpoint or {})
    if checkpoint_id:
        target["checkpoint_id"] = checkpoint_id
    config = _config(thread_id, checkpoint_id=target.get("checkpoint_id"), checkpoint_ns=target.get("checkpoint_ns"))
    current = await served.graph.aget_state(_config(thread_id))
    exists = bool((current.config.get("configurable") or {}).get("checkpoint_id"))
    if as_node is None and (not exists or (isinstance(values, dict) and values.get("messages") == [])):
        as_node = "__start__"
    try:
        await served.graph.aupdate_state(config, values, as_node=as_node)
    except (InvalidUpdateError, ValueError, KeyError, TypeError) as exc:
        raise InvalidStateUpdate(f"{type(exc).__name__}: {exc}") from exc
    return await thread_state_get(served, thread_id)


def _before_config(before: Any, thread_id: str) -> dict | None:
    if before is None or before == "":
        return None
    if isinstance(before, str):
        return _config(thread_id, checkpoint_id=before)
    if isinstance(before, dict) and isinstance(before.get("configurable"), dict):
        return {"configurable": {"thread_id": thread_id, **before["configurable"]}}
    if isinstance(before, dict) and before.get("checkpoint_id"):
        return _config(thread_id, checkpoint_id=before["checkpoint_id"], checkpoint_ns=before.get("checkpoint_ns"))
    raise InvalidStateUpdate("before must be a checkpoint id, {checkpoint_id, checkpoint_ns?} or {configurable}.")


async def thread_history(served: ServedGraph, thread_id: str, *, limit: int = 10, before: Any = None,
                         metadata: dict | None = None, checkpoint: dict | None = None) -> list[dict]:
    """Past states, newest first, with their tasks (the client rediscovers subagents from them)."""
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    for key in ("checkpoint_id", "checkpoint_ns"):
        if (checkpoint or {}).get(key) is not None:
            configurable[key] = checkpoint[key]
    config = {"configurable": configurable}
    states = []
    async for snapshot in served.graph.aget_state_history(config, filter=metadata or None,
                                                          before=_before_config(before, thread_id), limit=limit):
        states.append(thread_state_from_snapshot(snapshot, thread_id))
    return states


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
        found = await served.graph.checkpointer.aget_tuple(_config(thread_id, checkpoint_ns=ns))
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
    async for item in served.graph.checkpointer.alist(
            config, before=_config(thread_id, checkpoint_id=before) if before else None, limit=limit):
        metadata = dict(item.metadata or {})
        found.append({"id": item.config["configurable"]["checkpoint_id"], "timestamp": item.checkpoint.get("ts"),
                      "step": metadata.get("step"), "metadata": metadata})
    return found

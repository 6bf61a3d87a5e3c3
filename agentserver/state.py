"""Thread state in the Agent Server's `ThreadState` shape, read and written through a served graph (sync API).

The shape is chat.threads' (what the examples' client parses) plus the Agent Server's `interrupts`,
`checkpoint_id` and `parent_checkpoint_id`; with `subgraphs` each task carries its subgraph's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import InvalidUpdateError
from langgraph.types import StateSnapshot

from agentruntime.selectors import ServedGraph


class InvalidStateRequest(ValueError):
    """The graph cannot apply the update or read (unknown node, bad values, bad checkpoint)."""


EMPTY_STATE: dict[str, Any] = {
    "values": {}, "next": [], "tasks": [], "metadata": None, "created_at": None, "checkpoint": None,
    "parent_checkpoint": None, "interrupts": [], "checkpoint_id": None, "parent_checkpoint_id": None}


def _ref(config: Mapping[str, Any] | None, thread_id: str) -> dict | None:
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("checkpoint_id"):
        return None
    ref = {"checkpoint_id": configurable["checkpoint_id"], "thread_id": configurable.get("thread_id", thread_id),
           "checkpoint_ns": configurable.get("checkpoint_ns", "")}
    if configurable.get("checkpoint_map"):
        ref["checkpoint_map"] = configurable["checkpoint_map"]
    return ref


def _interrupt(interrupt: Any) -> dict:
    return {"value": interrupt.value, "id": getattr(interrupt, "id", None)}


def _task(task: Any, thread_id: str) -> dict:
    nested = task.state if isinstance(task.state, StateSnapshot) else None
    checkpoint = None
    if isinstance(task.state, dict):
        configurable = task.state.get("configurable") or {}
        checkpoint = {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", "")}
        if configurable.get("checkpoint_id"):
            checkpoint["checkpoint_id"] = configurable["checkpoint_id"]
    return {
        "id": task.id,
        "name": task.name,
        # e.g. ["__pregel_push", 0, false]: how a client maps a subagent's tool call to its namespace.
        "path": list(task.path) if task.path is not None else None,
        "error": None if task.error is None else f"{type(task.error).__name__}: {task.error}",
        "interrupts": [_interrupt(i) for i in task.interrupts or ()],
        "checkpoint": checkpoint,
        "state": state_from_snapshot(nested, thread_id) if nested is not None else None,
        "result": task.result,
    }


def state_from_snapshot(snapshot: StateSnapshot, thread_id: str) -> dict:
    """A `StateSnapshot` as the Agent Server's `ThreadState`."""
    created_at = snapshot.created_at
    checkpoint, parent = _ref(snapshot.config, thread_id), _ref(snapshot.parent_config, thread_id)
    tasks = [_task(task, thread_id) for task in snapshot.tasks or ()]
    return {
        "values": snapshot.values or {},
        "next": list(snapshot.next or ()),
        "tasks": tasks,
        "metadata": dict(snapshot.metadata) if snapshot.metadata is not None else None,
        "created_at": created_at if isinstance(created_at, str) or created_at is None else created_at.isoformat(),
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": [i for task in tasks for i in task["interrupts"]],
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }


def _config(thread_id: str, checkpoint: dict | None = None) -> RunnableConfig:
    given = checkpoint or {}
    configurable: dict[str, Any] = {"thread_id": thread_id}
    for key in ("checkpoint_id", "checkpoint_ns", "checkpoint_map"):
        if given.get(key) is not None:
            configurable[key] = given[key]
    return {"configurable": configurable}


def snapshot_get(served: ServedGraph, thread_id: str, *, checkpoint: dict | None = None,
                 subgraphs: bool = False) -> StateSnapshot | None:
    """The thread's snapshot (at `checkpoint` when given), or None when nothing is checkpointed there.

    The live snapshot applies what the checkpoint's finished tasks wrote. When that cannot be applied (a run's input
    that its channel's reducer refused, which also failed the run), the checkpoint's record is given instead: the
    values as of the start of its step, with the task that wrote the input, as the thread's history shows it. So the
    thread stays readable with the values it had before that run, as `langgraph dev` shows them in GET
    /threads/{id} and in the history (its GET /state answers 500 there).
    """
    config = _config(thread_id, checkpoint)
    snapshot: StateSnapshot | None
    try:
        snapshot = served.graph.get_state(config, subgraphs=subgraphs)
    except (ValueError, KeyError, TypeError) as exc:
        snapshot = _recorded_snapshot(served, config)
        if snapshot is None:
            raise InvalidStateRequest(f"{type(exc).__name__}: {exc}") from exc
    if snapshot.created_at is None:
        return None
    return snapshot


def _recorded_snapshot(served: ServedGraph, config: RunnableConfig) -> StateSnapshot | None:
    """The checkpoint's snapshot as its history records it (pending writes not applied), or None when even that
    cannot be built."""
    try:
        return next(iter(served.graph.get_state_history(config, limit=1)), None)
    except (ValueError, KeyError, TypeError):
        return None


def state_get(served: ServedGraph, thread_id: str, *, checkpoint: dict | None = None,
              subgraphs: bool = False) -> dict:
    """The thread's state; with nothing checkpointed, the empty state (naming the checkpoint asked for)."""
    snapshot = snapshot_get(served, thread_id, checkpoint=checkpoint, subgraphs=subgraphs)
    if snapshot is not None:
        return state_from_snapshot(snapshot, thread_id)
    empty = dict(EMPTY_STATE)
    if checkpoint and checkpoint.get("checkpoint_id"):
        empty["checkpoint"] = {"checkpoint_id": checkpoint["checkpoint_id"], "thread_id": thread_id}
        empty["checkpoint_id"] = checkpoint["checkpoint_id"]
    return empty


def state_update(served: ServedGraph, thread_id: str, *, values: Any, as_node: str | None,
                 checkpoint: dict | None, metadata: dict | None = None) -> dict:
    """Apply an update as `as_node` (on a thread without state, or with `messages: []`, as `__start__`, which is
    how the examples bootstrap a thread); the new checkpoint in the Agent Server's response shape. `metadata` goes
    into the checkpoint's metadata.

    Raises:
        InvalidStateRequest: the graph refuses the update.
    """
    if values is None:
        values = {"messages": []}
    exists = snapshot_get(served, thread_id) is not None
    if as_node is None and (not exists or (isinstance(values, dict) and values.get("messages") == [])):
        as_node = "__start__"
    if as_node is not None and as_node not in served.graph.nodes and as_node != "__start__":
        raise InvalidStateRequest(f"Node {as_node} does not exist")
    try:
        request: RunnableConfig = {**_config(thread_id, checkpoint), "metadata": dict(metadata or {})}
        config = served.graph.update_state(request, values, as_node=as_node)
    except (InvalidUpdateError, ValueError, KeyError, TypeError) as exc:
        raise InvalidStateRequest(f"{type(exc).__name__}: {exc}") from exc
    configurable = dict(config.get("configurable") or {})
    ref = {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", ""),
           "checkpoint_id": configurable.get("checkpoint_id")}
    return {"checkpoint": ref, "configurable": ref, "checkpoint_id": ref["checkpoint_id"]}


def _before(before: Any, thread_id: str) -> RunnableConfig | None:
    if before in (None, ""):
        return None
    if isinstance(before, str):
        return _config(thread_id, {"checkpoint_id": before})
    if isinstance(before, dict) and isinstance(before.get("configurable"), dict):
        return {"configurable": {"thread_id": thread_id, **before["configurable"]}}
    if isinstance(before, dict) and before.get("checkpoint_id"):
        return _config(thread_id, before)
    raise InvalidStateRequest("before must be a checkpoint id, {checkpoint_id, checkpoint_ns?} or {configurable}.")


def state_history(served: ServedGraph, thread_id: str, *, limit: int, before: Any = None,
                  metadata: dict | None = None, checkpoint: dict | None = None) -> list[dict]:
    """Past states, newest first."""
    config = _config(thread_id, {"checkpoint_ns": "", **(checkpoint or {})})
    return [state_from_snapshot(snapshot, thread_id) for snapshot in served.graph.get_state_history(
        config, filter=metadata or None, before=_before(before, thread_id), limit=limit)]

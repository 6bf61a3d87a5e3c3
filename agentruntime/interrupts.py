"""A thread's pending interrupts, read from its checkpoint, and the answers `input.respond` may give them.

The checkpoint, not memory, says what is pending: a reload, a reconnect or another process sees the same. The root
snapshot lists every interrupt (a subagent's too, through the task that ran it); the subgraph snapshots say where
each was raised, which is the namespace its `input.requested` event carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from agentruntime import db_executor, reads
from agentruntime.served_graphs import ServedGraph

# LangChain's HumanInTheLoopMiddleware: what each decision type must carry besides `type`.
_DECISION_FIELDS: dict[str, tuple[str, ...]] = {"approve": (), "edit": ("edited_action",), "reject": (),
                                                "respond": ("message",)}


class InvalidResponse(ValueError):
    """The answer does not fit the interrupt (invalid_argument)."""


@dataclass(frozen=True)
class PendingInterrupt:
    id: str
    value: Any
    # Where it was asked (the namespace of its `input.requested` event), and every namespace an answer may name.
    namespace: list[str]
    namespaces: tuple[tuple[str, ...], ...] = ()


async def pending_interrupts(served: ServedGraph, thread_id: str) -> dict[str, PendingInterrupt]:
    """The interrupts the thread's latest checkpoint waits on, by id, with the namespace each was asked at."""
    found = await checkpoint_interrupts(served, thread_id)
    asked = await db_executor.run(reads.interrupt_namespaces, thread_id=thread_id, interrupt_ids=list(found))
    pending = {}
    for interrupt_id, (value, derived) in found.items():
        namespace = asked.get(interrupt_id, derived)
        pending[interrupt_id] = PendingInterrupt(interrupt_id, value, namespace,
                                                 tuple(dict.fromkeys([tuple(namespace), tuple(derived)])))
    return pending


async def checkpoint_interrupts(served: ServedGraph, thread_id: str) -> dict[str, tuple[Any, list[str]]]:
    """The checkpoint's own word: interrupt id → (value, namespace of the graph that raised it)."""
    snapshot = await served.graph.aget_state({"configurable": {"thread_id": thread_id}}, subgraphs=True)
    found: dict[str, tuple[Any, list[str]]] = {}
    await _collect(served, thread_id, snapshot, [], found)
    return found


async def _collect(served: ServedGraph, thread_id: str, snapshot: StateSnapshot, namespace: list[str],
                   found: dict[str, tuple[Any, list[str]]]) -> None:
    for task in snapshot.tasks or ():
        inner = namespace
        if isinstance(task.state, StateSnapshot):
            # A subgraph node: its own record first, it names the deeper namespace.
            inner = _namespace_of(task.state.config) or [*namespace, f"{task.name}:{task.id}"]
            await _collect(served, thread_id, task.state, inner, found)
        elif task.interrupts:
            # A graph the task ran itself (a deep agent's subagent, inside its `task` tool) is no subgraph node of
            # the snapshot, but it checkpoints under the task's namespace: then the interrupt is its own.
            ns = [*namespace, f"{task.name}:{task.id}"]
            config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "|".join(ns)}}
            if await served.saver.aget_tuple(config) is not None:
                inner = ns
        for interrupt in task.interrupts or ():
            found.setdefault(interrupt.id, (interrupt.value, inner))


def _namespace_of(config: Any) -> list[str]:
    ns = ((config or {}).get("configurable") or {}).get("checkpoint_ns") or ""
    return ns.split("|") if ns else []


def check_response(interrupt: PendingInterrupt, response: Any) -> None:
    """Refuse an answer a human-in-the-loop request cannot take; any answer suits another interrupt.

    Raises:
        InvalidResponse: not `{decisions: [...]}` with one allowed decision per requested action.
    """
    value = interrupt.value
    if not (isinstance(value, dict) and isinstance(value.get("action_requests"), list)
            and isinstance(value.get("review_configs"), list)):
        return
    decisions = response.get("decisions") if isinstance(response, dict) else None
    actions, configs = value["action_requests"], value["review_configs"]
    if not isinstance(decisions, list) or len(decisions) != len(actions):
        raise InvalidResponse(f"Interrupt {interrupt.id} asks about {len(actions)} tool call(s): answer with "
                              f"{{\"decisions\": [...]}}, one decision per call.")
    for index, (decision, action) in enumerate(zip(decisions, actions, strict=True)):
        allowed = _allowed(configs, action, index)
        kind = decision.get("type") if isinstance(decision, dict) else None
        if kind not in allowed:
            raise InvalidResponse(f"Decision {index} of interrupt {interrupt.id} must be one of {allowed} for "
                                  f"{action.get('name')}, not {kind!r}.")
        _check_fields(decision, kind, index, action.get("name"))


def _allowed(configs: list, action: dict, index: int) -> list[str]:
    # The middleware lists one review config per action, in the same order.
    config = configs[index] if index < len(configs) and isinstance(configs[index], dict) else {}
    if config.get("action_name") not in (None, action.get("name")):
        config = next((c for c in configs if isinstance(c, dict) and c.get("action_name") == action.get("name")), {})
    allowed = config.get("allowed_decisions")
    return [d for d in allowed if d in _DECISION_FIELDS] if isinstance(allowed, list) else []


def _check_fields(decision: dict, kind: str, index: int, tool: Any) -> None:
    for name in _DECISION_FIELDS[kind]:
        if name not in decision:
            raise InvalidResponse(f"Decision {index} ({kind}) needs {name}.")
    if kind == "edit":
        edited = decision["edited_action"]
        # New arguments for the same tool: an edit that names another tool would run something nobody reviewed.
        if not (isinstance(edited, dict) and edited.get("name") == tool and isinstance(edited.get("args"), dict)):
            raise InvalidResponse(f"Decision {index} (edit): edited_action must be {{\"name\": {tool!r}, "
                                  f"\"args\": {{...}}}}.")
    message = decision.get("message")
    if message is not None and not isinstance(message, str):
        raise InvalidResponse(f"Decision {index} ({kind}): message must be a string.")

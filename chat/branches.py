"""Branches of a thread, derived from its checkpoint history (no state of their own).

Editing a message or regenerating an answer starts a run from an earlier checkpoint (`run.start` with
`config.configurable.checkpoint_id`), so the thread's root checkpoints form a tree: every checkpoint with more than one
child is a fork, and every leaf is the end of a branch. From that tree alone:

- the branch shown by default is the one holding the newest checkpoint (what GET /state returns);
- a fork's position in the conversation is the number of messages at the forking checkpoint, so a page shows
  "< 2/3 >" on the message at that index, and each alternative opens the newest checkpoint of its subtree;
- where to fork from to edit a user message: the checkpoint before the run that sent it (the parent of the run's
  `input` checkpoint), so that repeated edits of one message are siblings under one fork;
- where to fork from to regenerate an answer: the first checkpoint holding the user message it answers, so that
  repeated regenerations are siblings too;
- which runs belong to other branches, so that a replay of the event log leaves them out (the streaming client
  applies replayed `values` as the thread's state and would otherwise mix the branches).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentruntime.selectors import ServedGraph


class NoSuchCheckpoint(LookupError):
    pass


@dataclass
class Node:
    id: str
    parent: str | None
    source: str | None
    run_id: str | None
    message_ids: list[str] = field(default_factory=list)
    message_types: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _field(message: Any, name: str) -> str:
    found = message.get(name) if isinstance(message, dict) else getattr(message, name, None)
    return str(found or "")


async def checkpoint_tree(served: ServedGraph, thread_id: str, *, with_messages: bool = True) -> dict[str, Node]:
    """The thread's root-namespace checkpoints by id, each with its parent, children and (`with_messages`) the ids
    and types of its messages."""
    nodes: dict[str, Node] = {}
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if with_messages:
        # Through the graph: the messages channel may be stored as deltas that only the graph puts together.
        found = [(s.config, s.parent_config, s.metadata, (s.values or {}).get("messages"))
                 async for s in served.graph.aget_state_history(config)]
    else:
        found = [(t.config, t.parent_config, t.metadata, None) async for t in served.saver.alist(config)]
    for own, parent_config, metadata, messages in found:
        metadata = metadata or {}
        messages = messages if isinstance(messages, list) else []
        checkpoint_id = own["configurable"]["checkpoint_id"]
        nodes[checkpoint_id] = Node(
            id=checkpoint_id, parent=(parent_config or {}).get("configurable", {}).get("checkpoint_id"),
            source=metadata.get("source"), run_id=None if metadata.get("run_id") is None else str(metadata["run_id"]),
            message_ids=[_field(m, "id") for m in messages], message_types=[_field(m, "type") for m in messages])
    for node in sorted(nodes.values(), key=lambda n: n.id):
        if node.parent in nodes:
            nodes[node.parent].children.append(node.id)
    return nodes


def lineage(nodes: dict[str, Node], head: str) -> list[Node]:
    """The checkpoints from the root down to `head`."""
    path, current = [], nodes.get(head)
    while current is not None:
        path.append(current)
        current = nodes.get(current.parent) if current.parent else None
    return path[::-1]


def newest_under(nodes: dict[str, Node], start: str) -> str:
    """The newest checkpoint in the subtree of `start` (checkpoint ids sort by creation)."""
    newest, stack = start, [start]
    while stack:
        node = nodes[stack.pop()]
        newest = max(newest, node.id)
        stack.extend(node.children)
    return newest


def _first_seen(path: list[Node]) -> dict[str, Node]:
    seen: dict[str, Node] = {}
    for node in path:
        for message_id in node.message_ids:
            seen.setdefault(message_id, node)
    return seen


def _edit_base(first: Node, nodes: dict[str, Node]) -> str:
    # A user message first appears in the step after its run's `input` checkpoint; the run started from that
    # checkpoint's parent (none for a thread's very first run, which then forks from the input checkpoint itself).
    run_input = nodes.get(first.parent) if first.parent else None
    if run_input is None:
        return first.id
    if run_input.source == "input" and run_input.parent in nodes:
        return run_input.parent
    return run_input.id


def branch_map(nodes: dict[str, Node], head: str | None = None) -> dict:
    """Where the branch ending at `head` (default: the newest checkpoint) forks, and where its messages fork from.

    Raises:
        NoSuchCheckpoint: `head` is not a root checkpoint of the thread.
    """
    latest = max(nodes) if nodes else None
    head = head or latest
    if head not in nodes:
        raise NoSuchCheckpoint(f"Checkpoint {head} not found in this thread.")
    path = lineage(nodes, head)
    first_seen = _first_seen(path)
    messages, turn_start = [], None
    for message_id, kind in zip(nodes[head].message_ids, nodes[head].message_types, strict=True):
        first = first_seen[message_id]
        entry = {"id": message_id, "type": kind}
        if kind == "human":
            entry["edit_from"] = _edit_base(first, nodes)
            turn_start = first.id
        elif turn_start is not None:
            # Re-running the turn from where its user message first appears answers it anew.
            entry["regenerate_from"] = turn_start
        messages.append(entry)
    forks, indexes = [], set()
    for node, child in zip(path, path[1:], strict=False):
        # Nested forks at one position (possible when other clients fork elsewhere) show as one choice.
        if len(node.children) < 2 or len(node.message_ids) in indexes:
            continue
        indexes.add(len(node.message_ids))
        forks.append({"checkpoint_id": node.id, "message_index": len(node.message_ids),
                      "current": node.children.index(child.id),
                      "heads": [newest_under(nodes, c) for c in node.children]})
    return {"checkpoint_id": head, "latest": latest, "messages": messages, "forks": forks}


def off_branch_runs(nodes: dict[str, Node]) -> set[uuid.UUID]:
    """Runs whose newest checkpoint lies off the newest checkpoint's branch.

    A regenerated answer forks in the middle of the run that first answered: that run's start is shared, but its
    end (the old answer) is not, so it counts as off the branch.
    """
    if not nodes:
        return set()
    on_branch = {n.id for n in lineage(nodes, max(nodes))}
    newest: dict[str, str] = {}
    for node in nodes.values():
        if node.run_id is not None:
            newest[node.run_id] = max(newest.get(node.run_id, node.id), node.id)
    found = set()
    for run_id, checkpoint_id in newest.items():
        if checkpoint_id in on_branch:
            continue
        try:
            found.add(uuid.UUID(run_id))
        except ValueError:
            continue
    return found

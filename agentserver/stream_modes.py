"""A run's LangGraph stream-mode output as the Agent Server's SSE frames (`event: <mode>`, `data: <json>`).

The Agent Server API (agentserver/) starts chat runs with a list of stream modes; the run executor
(agentruntime/runs/execution.py) runs such a run with `graph.astream(stream_mode=[...])` and turns each chunk into
frames here, which it stores in the thread's event log beside the protocol events, on the channel `as:<run id>`.
What the frames say follows LangChain's Agent Server (`langgraph dev` 0.16.7), checked by
tests/agentserver/test_differential.py:

- the first frame is `metadata` `{run_id, attempt}`;
- `messages-tuple` sends LangGraph's `(message chunk, metadata)` pairs as `messages`; `messages` sends
  `messages/metadata` once per message id, then the message accumulated so far, as a whole message (`ai`), as
  `messages/partial` (or a finished one as `messages/complete`);
- `events` runs the graph with `astream_events` (v2) instead and forwards every callback event but the run's own
  `on_chain_stream` (agentruntime/runs/execution.py);
- with `stream_subgraphs`, a subgraph's frames are named `<mode>|<namespace>|…`;
- an interrupt arrives in the `values` (and `updates`) frames as `__interrupt__`;
- a failure ends the stream with `error` `{error, message}`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, convert_to_messages, message_chunk_to_message
from langgraph.types import Command, Interrupt, Send

from agentruntime.services import Frame, dumps, frame_channel, to_jsonable
from core.protocol_errors import error_body

STREAM_MODES = ("values", "updates", "messages", "messages-tuple", "events", "debug", "custom", "tasks",
                "checkpoints")
def frame_jsonable(obj: Any) -> Any:
    """The JSON form of what a frame carries, as the Agent Server writes it: an interrupt or a command field by
    field (the chat protocol's forms, agentruntime.events.records.to_jsonable, differ), a `Send` as `{node, args}`, a
    named tuple as an object."""
    if isinstance(obj, Interrupt):
        schema = obj.response_schema
        return {"value": obj.value, "id": obj.id, "response_schema": schema if isinstance(schema, dict) else None}
    if isinstance(obj, Command):
        return {"graph": obj.graph, "update": obj.update, "resume": obj.resume, "goto": obj.goto}
    if isinstance(obj, Send):
        return {"node": obj.node, "args": obj.arg}
    as_dict = getattr(obj, "_asdict", None)
    if isinstance(obj, tuple) and callable(as_dict):
        return as_dict()
    return to_jsonable(obj)


def graph_modes(requested: list[str]) -> list[str]:
    """The LangGraph stream modes a run with these requested modes asks the graph for."""
    # Interrupts arrive with `values` (`__interrupt__`), as LangGraph >= 1.0.4 sends them. With `events`, `debug`
    # is asked for too, as the Agent Server does (what astream_events reports depends on it).
    modes = {("messages" if mode == "messages-tuple" else mode) for mode in requested if mode != "events"}
    return sorted(modes | {"debug"} if "events" in requested else modes)


class FrameMaker:
    """Turns one run's `astream` chunks into frames; keeps the messages accumulated for `messages` mode."""

    def __init__(self, *, run_id, requested: list[str], subgraphs: bool):
        self.channel = frame_channel(run_id)
        self.requested = set(requested)
        self.subgraphs = subgraphs
        self._messages: dict[str, BaseMessage] = {}

    def frame(self, event: str, data: Any, namespace: tuple[str, ...] = ()) -> Frame:
        return Frame(event=event, data=dumps(data, default=frame_jsonable), channel=self.channel,
                     namespace=list(namespace))

    def metadata(self, run_id, attempt: int) -> Frame:
        return self.frame("metadata", {"run_id": str(run_id), "attempt": attempt})

    def error(self, exc: BaseException) -> Frame:
        return self.frame("error", error_body(type(exc).__name__, str(exc)))

    def convert(self, item: tuple) -> list[Frame]:
        if self.subgraphs:
            namespace, mode, chunk = item
        else:
            (mode, chunk), namespace = item, ()

        def name(mode: str) -> str:
            return f"{mode}|{'|'.join(namespace)}" if namespace else mode

        if mode == "debug" and isinstance(chunk, dict) and chunk.get("type") == "checkpoint":
            chunk = {**chunk, "payload": debug_checkpoint(chunk.get("payload"))}
        if mode == "messages":
            if "messages-tuple" in self.requested:
                return [self.frame(name("messages"), chunk, namespace)]
            if "messages" in self.requested:
                return self._message_frames(chunk, namespace)
            return []
        if mode in self.requested:
            return [self.frame(name(mode), chunk, namespace)]
        return []

    def _message_frames(self, chunk, namespace) -> list[Frame]:
        message, meta = chunk
        if isinstance(message, dict):
            message = convert_to_messages([message])[0]
        finished = not isinstance(message, BaseMessageChunk)
        frames = []
        if message.id not in self._messages:
            frames.append(self.frame("messages/metadata", {message.id: {"metadata": meta}}, namespace))
            self._messages[message.id] = message
        elif finished:
            # A whole message after its chunks replaces them (a chunk plus a message cannot be added up).
            self._messages[message.id] = message
        else:
            self._messages[message.id] += message
        # Partial or complete, the message so far is sent as a whole message (`ai`, not `AIMessageChunk`), as the
        # Agent Server sends it.
        whole = self._messages[message.id]
        whole = message_chunk_to_message(whole) if isinstance(whole, BaseMessageChunk) else whole
        return [*frames, self.frame("messages/complete" if finished else "messages/partial", [whole], namespace)]


def _checkpoint_of(config: dict | None) -> dict | None:
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("thread_id") or not configurable.get("checkpoint_id"):
        return None
    found = {"checkpoint_id": configurable["checkpoint_id"], "thread_id": configurable["thread_id"]}
    if "checkpoint_ns" in configurable:
        found["checkpoint_ns"] = configurable["checkpoint_ns"] or ""
    if "checkpoint_map" in configurable:
        found["checkpoint_map"] = configurable["checkpoint_map"]
    return found


def debug_checkpoint(payload: dict | None) -> dict | None:
    """A debug `checkpoint` payload with `checkpoint`/`parent_checkpoint` added, as the Agent Server sends it."""
    if not payload:
        return None
    tasks = []
    for task in payload.get("tasks") or ():
        state = task.get("state") if isinstance(task, dict) else None
        if isinstance(state, dict) and state.get("configurable"):
            task = {**{k: v for k, v in task.items() if k != "state"}, "checkpoint": state["configurable"]}
        tasks.append(task)
    return {**payload, "checkpoint": _checkpoint_of(payload.get("config")),
            "parent_checkpoint": _checkpoint_of(payload.get("parent_config")), "tasks": tasks}

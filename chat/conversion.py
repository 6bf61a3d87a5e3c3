"""The conversion of a protocol run's LangGraph v3 stream to the Agent Streaming Protocol's events.

The Python stream differs from what the JS examples send (agent-streaming-protocol.md §9.3); `EventConverter`
fixes each difference:

1. `messages` data is a `(payload, metadata)` tuple: the payload alone is sent, `params.node` comes from metadata.
2. Subgraph (subagent) `lifecycle` events arrive at namespace `[]` with the real one in `data.namespace`: it is
   moved to `params.namespace`, or a subagent's `completed` would look like the root run ending.
3. No root lifecycle at all: the run executor (agentruntime/runs/execution.py) adds `running` and the terminal event.
4. `checkpoints` carry the whole checkpoint and `updates` a raw `{node: delta}`: reduced to `{id, parent_id, step,
   source}` and `{node, values}`.
5. Live objects (messages, `Command`, `Send`, interrupts) are serialised to JSON the way the JS server does.
6. Tool-call argument streaming uses `tool-call-delta`, which the 1.x JS client ignores: it becomes `block-delta`
   with the accumulated arguments in a `tool_call_chunk`.
7. No `event_id` and `seq` restarting per run: `seq` is assigned per thread by the event store
   (agentruntime/writes/event_log.py) and `event_id` is `str(seq)`.
8. Namespaces. `tools` events arrive at the namespace of the graph the tool runs in (the coordinator's `task` calls
   at `[]`, a subagent's tool calls at `["tools:<T>"]`); the JS wire puts each tool execution at its own Pregel task
   namespace (§5.3): `task` calls at `["tools:<T>"]`, where that subagent then runs, and a subagent's tool calls at
   `["tools:<T>", "tools:<U>"]`. They are moved there: `TaskObserver` reads the `tasks` stream (which the lifecycle
   transformer hides from the event log) to learn which task executes which tool call. Without that, the client
   counted a subagent's tool calls as the coordinator's (root tool calls are those at namespace length <= 1).
   Model messages keep Python's spelling (`[]` and `["tools:<T>"]`, no `model:<id>` segment), which the client's
   depth-1 subscriptions read the same way; message ids `lc_run--<uuid>` and dict `tool-started.input` are kept
   too.
9. Subagent `lifecycle.started` carrying `graph_name: "<subagent>"` and a `cause` is kept (the client ignores it).

Apart from the event records (agentruntime/events/records.py) so that processes storing or reading events (the
worker, the event store) do not import LangGraph and LangChain: only a run's execution converts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage
from langgraph.stream import ProtocolEvent, StreamTransformer

from agentruntime.services import WireEvent, make_event, updates_events

_LIFECYCLE_EVENTS = {"started", "running", "completed", "failed", "interrupted"}


class TaskObserver(StreamTransformer):
    """Records, from the `tasks` stream, the namespace of the Pregel task that executes each tool call.

    A tool-dispatch task (the `tools` node, one task per `Send`) starts with its tool call(s) as input, before any
    of its tools reports `tool-started`; its own namespace is its graph's plus `<node>:<task id>`. Observe-only:
    it never changes or drops an event.
    """

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = (), *, sink: dict[str, list[str]]) -> None:
        super().__init__(scope)
        self.sink = sink

    def init(self) -> dict[str, Any]:
        return {}

    def process(self, event: ProtocolEvent) -> bool:
        # Subgraph muxes get the same events again: the run's own (root) mux sees every namespace already.
        if self.scope or event.get("method") != "tasks":
            return True
        params = event.get("params") or {}
        data = params.get("data")
        if not isinstance(data, dict) or "result" in data or not data.get("id") or not data.get("name"):
            return True
        namespace = [*params.get("namespace", ()), f"{data['name']}:{data['id']}"]
        for call_id in _tool_call_ids(data.get("input")):
            self.sink[call_id] = namespace
        return True


def _tool_call_ids(task_input: Any) -> list[str]:
    # A `Send` of one call is `{tool_call: {...}, state}` (or, as streamed, a list holding the call); a legacy
    # tools node gets the whole state and is left alone.
    if isinstance(task_input, dict) and isinstance(task_input.get("tool_call"), dict):
        calls = [task_input["tool_call"]]
    elif isinstance(task_input, list):
        calls = task_input
    else:
        return []
    return [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)
            and c.get("name") and isinstance(c.get("args"), dict)]


class EventConverter:
    """Turns one run's raw v3 events into wire events; keeps the state tool-call accumulation needs.

    Pass `converter.observer` among the run's transformers: without it, tool events keep Python's namespaces.
    """

    def __init__(self) -> None:
        self._tool_calls: dict[tuple, dict[str, Any]] = {}
        self._tool_namespaces: dict[str, list[str]] = {}
        self.interrupts: list[dict[str, Any]] = []
        self._requested: set[Any] = set()

    @property
    def observer(self) -> Callable[[tuple[str, ...]], TaskObserver]:
        """A transformer factory for `astream_events(..., transformers=[...])` feeding this converter."""
        return lambda scope: TaskObserver(scope, sink=self._tool_namespaces)

    def convert(self, raw: dict[str, Any]) -> list[WireEvent]:
        method = raw.get("method", "")
        params = raw.get("params") or {}
        namespace = list(params.get("namespace") or [])
        timestamp = params.get("timestamp")
        data = params.get("data")
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return [make_event(method, namespace, data, node=params.get("node"), timestamp=timestamp)]
        return handler(namespace, data, params, timestamp)

    def _messages(self, namespace, data, params, timestamp) -> list[WireEvent]:
        payload, metadata = data if isinstance(data, tuple | list) and len(data) == 2 else (data, {})
        metadata = metadata or {}
        node = metadata.get("langgraph_node") or params.get("node")
        if isinstance(payload, dict) and "event" in payload:
            payload = self._translate_tool_delta(namespace, str(metadata.get("run_id", "")), payload)
            return [make_event("messages", namespace, payload, node=node, timestamp=timestamp)]
        if isinstance(payload, BaseMessage) and not isinstance(payload, AIMessageChunk | ToolMessage):
            # A node returned a finished message without streaming it: replay it as one streamed message.
            from langchain_core.language_models._compat_bridge import message_to_events

            return [make_event("messages", namespace, self._translate_tool_delta(namespace, payload.id or "", e),
                               node=node, timestamp=timestamp)
                    for e in message_to_events(payload, message_id=payload.id)]
        # Legacy token chunks and tool messages duplicate what the stream already carries.
        return []

    def _translate_tool_delta(self, namespace: list[str], stream_id: str, payload: Mapping[str, Any]
                              ) -> Mapping[str, Any]:
        kind = payload.get("event")
        key = (tuple(namespace), stream_id, payload.get("index"))
        if kind == "message-start":
            for stale in [k for k in self._tool_calls if k[:2] == key[:2]]:
                del self._tool_calls[stale]
        elif kind == "content-block-start":
            content = payload.get("content") or {}
            if content.get("type") == "tool_call_chunk":
                self._tool_calls[key] = {"type": "tool_call_chunk", "id": content.get("id"),
                                         "name": content.get("name"), "args": content.get("args") or ""}
        elif kind == "content-block-delta":
            delta = payload.get("delta") or {}
            if delta.get("type") == "tool-call-delta":
                block = self._tool_calls.setdefault(key, {"type": "tool_call_chunk", "id": None, "name": None,
                                                          "args": ""})
                block["args"] += delta.get("args") or ""
                for field in ("id", "name"):
                    if delta.get(field):
                        block[field] = delta[field]
                return {**payload, "delta": {"type": "block-delta", "fields": dict(block)}}
        elif kind == "content-block-finish":
            self._tool_calls.pop(key, None)
        return payload

    def _tools(self, namespace, data, params, timestamp) -> list[WireEvent]:
        call_id = data.get("tool_call_id") if isinstance(data, dict) else None
        own = self._tool_namespaces.get(call_id) if isinstance(call_id, str) else None
        # Only ever one segment deeper than where Python put it: the executing task inside that very graph.
        if own is not None and len(own) == len(namespace) + 1 and own[:-1] == namespace:
            namespace = own
        if isinstance(call_id, str) and data.get("event") in ("tool-finished", "tool-error"):
            self._tool_namespaces.pop(call_id, None)
        return [make_event("tools", namespace, data, node=params.get("node"), timestamp=timestamp)]

    def _lifecycle(self, namespace, data, params, timestamp) -> list[WireEvent]:
        data = dict(data or {})
        target = data.pop("namespace", None)
        data.pop("trigger_call_id", None)
        if data.get("event") not in _LIFECYCLE_EVENTS:
            # "drained" (a graph stopped by a drain request) has no protocol spelling; the run did not finish.
            data["event"] = "interrupted"
        return [make_event("lifecycle", list(target) if target is not None else namespace, data,
                           timestamp=timestamp)]

    def _values(self, namespace, data, params, timestamp) -> list[WireEvent]:
        events = [make_event("values", namespace, data, timestamp=timestamp)]
        for interrupt in params.get("interrupts") or ():
            request = {"interrupt_id": getattr(interrupt, "id", None), "payload": getattr(interrupt, "value", None)}
            if isinstance(interrupt, dict):
                request = {"interrupt_id": interrupt.get("id"), "payload": interrupt.get("value")}
            if not namespace:
                self.interrupts.append(request)
            # A subgraph's interrupt reaches every graph above it: it is asked once, where it was raised (the
            # subgraph's values come first).
            if request["interrupt_id"] in self._requested:
                continue
            self._requested.add(request["interrupt_id"])
            events.append(make_event("input.requested", namespace, request, timestamp=timestamp))
        return events

    def _updates(self, namespace, data, params, timestamp) -> list[WireEvent]:
        return updates_events(namespace, data, timestamp=timestamp)

    def _checkpoints(self, namespace, data, params, timestamp) -> list[WireEvent]:
        data = data or {}
        config = ((data.get("config") or {}).get("configurable")) or {}
        parent = ((data.get("parent_config") or {}).get("configurable")) or {}
        metadata = data.get("metadata") or {}
        envelope = {"id": config.get("checkpoint_id"), "parent_id": parent.get("checkpoint_id"),
                    "step": metadata.get("step"), "source": metadata.get("source")}
        return [make_event("checkpoints", namespace, envelope, timestamp=timestamp)]

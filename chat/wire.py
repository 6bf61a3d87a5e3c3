"""Agent Streaming Protocol events: LangGraph's `astream_events(version="v3")` output turned into the JS wire.

The Python stream differs from what the JS examples send (agent-streaming-protocol.md §9.3); `EventConverter`
(chat/conversion.py) fixes each difference:

1. `messages` data is a `(payload, metadata)` tuple: the payload alone is sent, `params.node` comes from metadata.
2. Subgraph (subagent) `lifecycle` events arrive at namespace `[]` with the real one in `data.namespace`: it is
   moved to `params.namespace`, or a subagent's `completed` would look like the root run ending.
3. No root lifecycle at all: the run executor (chat/runs/execution.py) adds `running` and the terminal event.
4. `checkpoints` carry the whole checkpoint and `updates` a raw `{node: delta}`: reduced to `{id, parent_id, step,
   source}` and `{node, values}`.
5. Live objects (messages, `Command`, `Send`, interrupts) are serialised to JSON the way the JS server does.
6. Tool-call argument streaming uses `tool-call-delta`, which the 1.x JS client ignores: it becomes `block-delta`
   with the accumulated arguments in a `tool_call_chunk`.
7. No `event_id` and `seq` restarting per run: `seq` is assigned per thread by the event store
   (chat/services/event_log.py) and `event_id` is `str(seq)`.
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
"""

from __future__ import annotations

import base64
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import orjson

KNOWN_CHANNELS = ("values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom")
_PLAIN_CHANNELS = {"values", "checkpoints", "updates", "messages", "tools", "lifecycle", "tasks"}


@dataclass(slots=True)
class WireEvent:
    """One protocol event before the store numbers it. `params` is already JSON."""

    method: str
    namespace: list[str]
    channel: str
    params: bytes

    def encode(self, seq: int) -> bytes:
        """The event as sent on the wire, with its `seq` and `event_id`."""
        return b'{"type":"event","seq":%d,"event_id":"%d","method":%s,"params":%s}' % (
            seq, seq, orjson.dumps(self.method), self.params)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as the store holds it: numbered, with the exact bytes subscribers receive."""

    seq: int
    channel: str
    namespace: tuple[str, ...]
    payload: bytes


def make_event(method: str, namespace: list[str], data: Any, *, node: str | None = None,
               timestamp: int | None = None) -> WireEvent:
    params: dict[str, Any] = {"namespace": list(namespace),
                              "timestamp": timestamp if timestamp is not None else int(time.time() * 1000)}
    if node:
        params["node"] = node
    params["data"] = data
    return WireEvent(method=method, namespace=list(namespace), channel=infer_channel(method, data),
                     params=dumps(params))


def lifecycle_event(namespace: list[str], event: str, **fields: Any) -> WireEvent:
    return make_event("lifecycle", namespace, {"event": event, **{k: v for k, v in fields.items() if v is not None}})


def infer_channel(method: str, data: Any) -> str:
    """The subscription channel of an event (§4.3); "" for methods no subscription can match."""
    if method in _PLAIN_CHANNELS:
        return method
    if method in ("input.requested", "input"):
        return "input"
    if method == "custom":
        name = data.get("name") if isinstance(data, dict) else None
        return f"custom:{name}" if isinstance(name, str) and name else "custom"
    return ""


# ---------------------------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------------------------
def to_jsonable(obj: Any) -> Any:
    """The JSON form of LangChain/LangGraph objects, as the JS server writes them (difference 5)."""
    kind = type(obj).__name__
    if kind == "Command" and dataclasses.is_dataclass(obj):
        return _command_to_jsonable(obj)
    if kind == "Send" and hasattr(obj, "node") and hasattr(obj, "arg"):
        return {"lg_name": "Send", "node": obj.node, "arg": obj.arg}
    if kind == "Interrupt" and hasattr(obj, "value"):
        return {"value": obj.value, "id": getattr(obj, "id", None)}
    if _is_pydantic_model(obj):  # LangChain messages among them
        return obj.model_dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, set | frozenset):
        return list(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(obj)).decode()
    if isinstance(obj, BaseException):
        return f"{type(obj).__name__}: {obj}"
    return str(obj)


def _command_to_jsonable(command: Any) -> dict[str, Any]:
    """A LangGraph `Command` as the JS server writes it (typed `Any`: langgraph is not imported here)."""
    goto = command.goto if isinstance(command.goto, list | tuple) else ([command.goto] if command.goto else [])
    result = {"lg_name": "Command", "lc_direct_tool_output": True, "update": command.update, "goto": list(goto)}
    if command.resume is not None:
        result["resume"] = command.resume
    if command.graph is not None:
        result["graph"] = command.graph
    return result


def _is_pydantic_model(obj: Any) -> bool:
    # Looked up, not imported: processes that never load pydantic (the export worker) hold no model, and
    # importing it here would cost them its memory.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(obj, pydantic.BaseModel)


# Dataclasses go through `to_jsonable` too: `Command` must not be written field by field.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any, default=to_jsonable) -> bytes:
    try:
        return orjson.dumps(value, default=default, option=_ORJSON_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        # orjson refuses integers beyond 64 bits (and a few exotic keys); the stdlib encoder does not.
        return json.dumps(_plain(value), default=default).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value

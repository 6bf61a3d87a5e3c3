"""The event log's records: the Agent Streaming Protocol's events as every run stores them (its root lifecycle,
values and updates; a protocol run all of its events, chat/conversion.py), numbered per thread, and the JSON encoding
the runtime uses for everything it stores and sends.

`seq` is assigned per thread by the event store (agentruntime/writes/event_log.py) and `event_id` is `str(seq)`.
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


def updates_events(namespace: list[str], data: Any, *, timestamp: int | None = None) -> list[WireEvent]:
    """A graph's `updates` chunk (`{node: delta}`) as the protocol's `updates` events, one per node."""
    if not isinstance(data, dict):
        return [make_event("updates", namespace, {"values": data}, timestamp=timestamp)]
    return [make_event("updates", namespace, {"node": node, "values": delta if delta is not None else {}},
                       node=node, timestamp=timestamp) for node, delta in data.items()]


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

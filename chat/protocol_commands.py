"""`POST /threads/:id/commands`: the protocol's command envelope in, a success or error envelope out.

Implemented: `run.start`, `input.respond` (chat/respond.py), `state.fork`, `state.get`, `state.listCheckpoints`,
`agent.getTree`. Other methods the protocol defines get `not_supported` (they need WebSockets or message injection,
which this server does not offer); anything else gets `unknown_command`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from agentruntime import selectors, services
from agentruntime.selectors import Caller, get_served_graph
from agentruntime.services import CommandError, db_run, start_run
from chat.respond import input_respond
from chat.threads import NoSuchNamespace, namespace_checkpoints, namespace_state
from core.protocol_errors import error_body

IMPLEMENTED = ("run.start", "input.respond", "state.fork", "state.get", "state.listCheckpoints", "agent.getTree")
NOT_SUPPORTED = ("input.inject", "subscription.subscribe", "subscription.unsubscribe",
                 "subscription.reconnect")
# Commands that create the thread for their caller when it does not exist yet.
CLAIMING = ("run.start", "state.fork")
# The run's configurable naming the tools whose calls wait for approval (the default agent's
# chat/agent/approvals.py); other graphs ignore it.
APPROVE_TOOLS = "approve_tools"


@dataclass
class Command:
    id: int | None
    method: str
    params: dict


def success(command_id: int | None, result: dict) -> dict:
    return {"type": "success", "id": command_id, "result": result}


def failure(command_id: int | None, code: str, message: str) -> dict:
    return {"type": "error", "id": command_id, **error_body(code, message)}


def parse_command(payload: Any) -> Command:
    """Validate the envelope `{id, method, params}` and its method.

    Raises:
        CommandError: invalid_argument (the envelope), not_supported or unknown_command (the method).
    """
    if not isinstance(payload, dict):
        raise CommandError("invalid_argument", "A command is a JSON object {id, method, params}.")
    command_id = payload.get("id")
    valid_id = isinstance(command_id, int) and not isinstance(command_id, bool) and command_id >= 0
    method, params = payload.get("method"), payload.get("params", {})
    if not valid_id:
        raise CommandError("invalid_argument", "id must be a non-negative whole number.")
    if not isinstance(method, str) or not method:
        raise CommandError("invalid_argument", "method must be a command name such as run.start.")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise CommandError("invalid_argument", "params must be a JSON object.")
    command = Command(id=command_id, method=method, params=params)
    check_method(command)
    return command


def command_id_of(payload: Any) -> int | None:
    command_id = payload.get("id") if isinstance(payload, dict) else None
    return command_id if isinstance(command_id, int) and not isinstance(command_id, bool) else None


def check_method(command: Command) -> None:
    if command.method in NOT_SUPPORTED:
        raise CommandError("not_supported", f"{command.method} is not supported by this server (SSE only, no "
                                            f"message injection).")
    if command.method not in IMPLEMENTED:
        raise CommandError("unknown_command", f"Unsupported command: {command.method}")


async def execute(command: Command, *, caller: Caller, thread_id: str) -> dict:
    """Run an already validated command for the caller's thread; raises CommandError or NotFound."""
    if command.method == "input.respond":

        return await input_respond(command.params, caller=caller, thread_id=thread_id)
    if command.method in CLAIMING:
        thread = await db_run(services.thread_claim, thread_id=thread_id, caller=caller)
    else:
        thread = await db_run(selectors.thread_get_for_caller, thread_id=thread_id, caller=caller)
    handler = {
        "run.start": _run_start, "state.fork": _state_fork, "state.get": _state_get,
        "state.listCheckpoints": _list_checkpoints, "agent.getTree": _agent_tree,
    }[command.method]
    return await handler(command.params, thread)


# --- run.start / state.fork ----------------------------------------------------------------------------------------
async def _run_start(params: dict, thread) -> dict:
    run_input = params.get("input")
    if run_input is not None and not isinstance(run_input, dict):
        raise CommandError("invalid_argument", "input must be a JSON object (the graph's input) or null.")
    config = _object(params, "config")
    configurable = _object(config, "configurable")
    checkpoint_id = _optional_string(configurable, "checkpoint_id")
    metadata = _object(params, "metadata")
    # The only configurable a run takes from its caller besides checkpoint_id: which tool calls wait for approval.
    config = {"configurable": {APPROVE_TOOLS: _approve_tools(configurable)}} if APPROVE_TOOLS in configurable else {}
    run_id = await start_run(thread, run_input, checkpoint_id=checkpoint_id, metadata=metadata,
                             assistant_id=_optional_string(params, "assistant_id"), config=config)
    return {"run_id": str(run_id)}


async def _state_fork(params: dict, thread) -> dict:
    checkpoint_id = _optional_string(params, "checkpoint_id")
    if not checkpoint_id:
        raise CommandError("invalid_argument", "checkpoint_id is required.")
    run_input = params.get("input")
    if run_input is not None and not isinstance(run_input, dict):
        raise CommandError("invalid_argument", "input must be a JSON object or null.")
    run_id = await start_run(thread, run_input, checkpoint_id=checkpoint_id, metadata={})
    return {"run_id": str(run_id), "thread_id": thread.id}


# --- state.get / state.listCheckpoints -----------------------------------------------------------------------------
async def _state_get(params: dict, thread) -> dict:
    namespace = _namespace(params)
    keys = params.get("keys")
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
        raise CommandError("invalid_argument", "keys must be a list of state keys.")
    try:
        return await namespace_state(get_served_graph(thread.graph_name), thread.id, namespace, keys)
    except NoSuchNamespace as exc:
        raise CommandError("no_such_namespace", str(exc)) from None


async def _list_checkpoints(params: dict, thread) -> dict:
    limit = params.get("limit")
    # Bounded like history's limit: it becomes SQL's LIMIT, where a value past 64 bits overflows.
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000):
        raise CommandError("invalid_argument", "limit must be a whole number from 1 to 1000.")
    checkpoints = await namespace_checkpoints(get_served_graph(thread.graph_name), thread.id, _namespace(params),
                                              limit=limit, before=_optional_string(params, "before"))
    return {"checkpoints": checkpoints}


# --- agent.getTree -------------------------------------------------------------------------------------------------
async def _agent_tree(params: dict, thread) -> dict:
    run_id = _optional_string(params, "run_id")
    if run_id:
        try:
            run = await db_run(selectors.run_get, thread=thread, run_id=uuid.UUID(run_id))
        except ValueError:
            run = None
    else:
        run = await db_run(selectors.run_latest, thread=thread)
    if run is None:
        raise CommandError("no_such_run", f"Run {run_id} not found." if run_id else "This thread has no run yet.")
    events = await db_run(selectors.run_lifecycle_events, run=run)
    return {"tree": build_tree(run, events)}


def build_tree(run, events: list[dict]) -> dict:
    """The run's graph tree from its stored lifecycle events: the root and every subgraph it started."""
    root = {"namespace": [], "status": run.status, "graph_name": "root", "children": []}
    nodes: dict[tuple, dict] = {(): root}
    for event in events:
        params = event.get("params") or {}
        namespace, data = tuple(params.get("namespace") or ()), params.get("data") or {}
        if not namespace:
            root["graph_name"] = data.get("graph_name") or root["graph_name"]
            continue
        node = nodes.get(namespace)
        if node is None:
            node = nodes[namespace] = {"namespace": list(namespace), "status": "running",
                                       "graph_name": data.get("graph_name") or namespace[-1].split(":")[0],
                                       "children": []}
            parent = next((nodes[namespace[:i]] for i in range(len(namespace) - 1, -1, -1)
                           if namespace[:i] in nodes), root)
            parent["children"].append(node)
            if data.get("cause"):
                node["metadata"] = {"cause": data["cause"]}
        if data.get("event") in ("completed", "failed", "interrupted"):
            node["status"] = data["event"]
        elif data.get("event") == "started" and data.get("graph_name"):
            node["graph_name"] = data["graph_name"]
    return root


# --- params --------------------------------------------------------------------------------------------------------
def _object(params: dict, name: str) -> dict:
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CommandError("invalid_argument", f"{name} must be a JSON object.")
    return value


def _optional_string(params: dict, name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CommandError("invalid_argument", f"{name} must be a string.")
    return value


def _approve_tools(configurable: dict) -> Any:
    value = configurable[APPROVE_TOOLS]
    if value is None or isinstance(value, bool | str) or (
            isinstance(value, list) and all(isinstance(name, str) for name in value)):
        return value
    raise CommandError("invalid_argument", f"config.configurable.{APPROVE_TOOLS} must be a list of tool names, a "
                                           f"comma-separated string, \"*\", true or false.")


def _namespace(params: dict) -> list[str]:
    namespace = params.get("namespace", [])
    if namespace is None:
        return []
    if not isinstance(namespace, list) or not all(isinstance(s, str) for s in namespace):
        raise CommandError("invalid_argument", "namespace must be a list of strings.")
    return namespace

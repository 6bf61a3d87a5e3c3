"""What a served graph looks like from outside: its drawable graph, JSON schemas and subgraphs (read-only)."""

from __future__ import annotations

import warnings
from typing import Any

from pydantic import TypeAdapter

from agentruntime.selectors import served_specs


def served_graph_ids() -> list[str]:
    """The graph ids (langgraph.json names) this process serves, the default first."""
    return list(served_specs())


def drawable(graph: Any, *, xray: bool | int) -> dict:
    """The graph as `{nodes, edges}` (the Agent Server's shape: a node's data is only its name)."""
    found = graph.get_graph(xray=xray).to_json()
    nodes = []
    for node in found.get("nodes", []):
        node = dict(node)
        if isinstance(node.get("data"), dict):
            node["data"] = {"name": node["data"].get("name", node["id"])}
        nodes.append(node)
    return {"nodes": nodes, "edges": found.get("edges", [])}


def _state_schema(graph: Any) -> dict | None:
    builder = getattr(graph, "builder", None)
    state_type = getattr(builder, "state_schema", None)
    if state_type is None:
        return None
    try:
        schema = TypeAdapter(state_type).json_schema()
    except Exception:  # a state type pydantic cannot describe: the input schema is the best we have
        schema = graph.get_input_jsonschema()
    # Every state key may be absent until a node writes it.
    schema["properties"] = {k: {**v, "default": None} for k, v in (schema.get("properties") or {}).items()}
    schema["title"] = f"{graph.get_name()}_state"
    return schema


def schemas(graph: Any) -> dict:
    """Input, output, state, config and context JSON schemas (config `{}` when it has no properties)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # get_config_jsonschema is deprecated, but config schemas still exist
        config = graph.get_config_jsonschema()
    context = graph.get_context_jsonschema() if getattr(graph, "context_schema", None) is not None else None
    return {
        "input_schema": graph.get_input_jsonschema(),
        "output_schema": graph.get_output_jsonschema(),
        "state_schema": _state_schema(graph),
        "config_schema": config if config.get("properties") else {},
        "context_schema": context,
    }


def subgraph_schemas(graph: Any, *, namespace: str | None, recurse: bool) -> dict:
    """`{namespace: schemas}` of the graph's subgraphs (only `namespace` when given)."""
    return {ns: schemas(sub) for ns, sub in graph.get_subgraphs(namespace=namespace, recurse=recurse)}

"""What a revision's serving process runs: the project's graphs and their store, on the agent runtime."""

from __future__ import annotations

import json
from pathlib import Path

from agentruntime.services import store_configure


def project_graph_specs(config_path: str | Path) -> dict[str, str]:
    """The graphs of a langgraph.json, by name, with `./file.py` paths made absolute."""
    path = Path(config_path).resolve()
    graphs = json.loads(path.read_text(encoding="utf-8")).get("graphs") or {}
    specs = {}
    for name, entry in graphs.items():
        spec = entry.get("path") if isinstance(entry, dict) else entry
        target, _, attr = str(spec).rpartition(":")
        if target.endswith(".py") or "/" in target:
            target = str((path.parent / target).resolve())
        specs[str(name)] = f"{target}:{attr}"
    return specs


def project_thread_ttl(config_path: str | Path) -> object:
    """The `checkpointer.ttl` of a langgraph.json (None without one), as written: agentruntime.thread_ttl reads it."""
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    checkpointer = config.get("checkpointer") if isinstance(config, dict) else None
    return checkpointer.get("ttl") if isinstance(checkpointer, dict) else None


def configure_project_store(config_path: str | Path) -> None:
    """Give the graphs and the /store routes the store langgraph.json's `store` describes (its index, its TTLs),
    `./file.py` embedding functions resolved against the project's directory (raises StoreConfigError)."""
    path = Path(config_path).resolve()
    store_configure(json.loads(path.read_text(encoding="utf-8")).get("store"), base_dir=path.parent)

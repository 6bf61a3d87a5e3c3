"""A module that re-exports names of other modules, importing each only when it is first used.

A face module (agentruntime/services.py) lists what it offers as imports under `if TYPE_CHECKING:`, which type
checkers and import-linter read as they read any import; at run time `lazy_exports` reads that block and imports a
name's module when someone first asks the face for it. So a process that needs one light function of the face does
not load the heavy modules beside it (the run executor brings LangChain, the graphs LangGraph's Pregel).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any


def lazy_exports(module_name: str) -> Callable[[str], Any]:
    """The module's `__getattr__`: the names its `if TYPE_CHECKING:` block imports, each imported on first use."""

    def __getattr__(name: str) -> Any:
        home = _homes(module_name).get(name)
        if home is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home[0]), home[1])
        setattr(sys.modules[module_name], name, value)  # asked once: later lookups find it without this hook
        return value

    return __getattr__


@cache
def _homes(module_name: str) -> dict[str, tuple[str, str]]:
    """{exported name: (module, name there)} from the `from … import …` lines of the TYPE_CHECKING block."""
    source = Path(sys.modules[module_name].__file__ or "").read_text(encoding="utf-8")
    homes: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    homes.update({alias.asname or alias.name: (statement.module, alias.name)
                                  for alias in statement.names})
    return homes

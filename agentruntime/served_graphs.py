"""Which graphs the chat serves, and the one checkpointer every graph of this process uses.

`load_graph(spec, checkpointer=...)` is the reusable part: `serve_graphs` (the control plane) serves a project's
graphs with the same protocol code by calling `configure_graphs({name: spec})` before the first request. By default
the process serves CHAT_GRAPH alone, under the name "agent". `run.start`'s `assistant_id` picks a graph by its name;
"_", a missing or an unknown id picks the first one (see `graph_name_for`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.stream.transformers import CheckpointsTransformer, TasksTransformer, UpdatesTransformer

# Added to every run so that the wire carries what the JS server emits besides values/messages/lifecycle/tools.
BASE_TRANSFORMERS: tuple = (CheckpointsTransformer, UpdatesTransformer, TasksTransformer)
# The name CHAT_GRAPH (or a single `configure(spec)`) is served under, as in a one-graph langgraph.json.
DEFAULT_GRAPH_NAME = "agent"
# The start of the module name a `./file.py` graph is imported under (the rest is a hash of its path).
MODULE_PREFIX = "chat_graph_"


class ConfigurationError(RuntimeError):
    """A graph cannot run as configured. Its message is a complete sentence for the user, so a run that fails with
    it reports the message alone, without the type name other errors get."""


class GraphLoadError(ConfigurationError):
    """CHAT_GRAPH (or a served graph spec) cannot be turned into a graph."""


@dataclass
class ServedGraph:
    spec: str
    graph: Pregel
    transformers: list[Callable] = field(default_factory=list)
    # The name it is served under (the langgraph.json key `assistant_id` selects it by).
    key: str = ""

    @property
    def name(self) -> str:
        return self.graph.get_name() or "root"

    @property
    def saver(self) -> BaseCheckpointSaver:
        """The graph's checkpointer, typed: load_graph always binds a saver (Pregel types it `bool | saver | None`)."""
        return cast(BaseCheckpointSaver, self.graph.checkpointer)


def get_checkpointer():
    """The process-wide checkpointer: the Django-ORM saver, shared by every server process through the database."""
    from agentruntime.checkpointer.saver import get_checkpointer as django_checkpointer

    return django_checkpointer()


def load_graph(spec: str, *, checkpointer: Any) -> ServedGraph:
    """Load `package.module:attr` or `./path.py:attr` and bind it to `checkpointer`.

    `attr` may be a compiled graph, a `StateGraph` builder, or a factory (called with `checkpointer=` when it
    accepts it). A module-level `stream_transformers()` adds transformers to every run, as `langgraph dev` does.

    Raises:
        GraphLoadError: the spec is malformed, the module or attribute is missing, or it is not a graph.
    """
    module, target = import_object(spec)
    graph = _as_graph(target, checkpointer, spec)
    transformers: list[Callable] = list(BASE_TRANSFORMERS)
    factory = getattr(module, "stream_transformers", None)
    if callable(factory):
        transformers += [t for t in factory() if t not in transformers]
    return ServedGraph(spec=spec, graph=graph, transformers=transformers)


def import_object(spec: str, *, what: str = "Graph spec") -> tuple[Any, Any]:
    """The module and the object that `package.module:attr` or `./path.py:attr` names (also a project's own ASGI
    app, langgraph.json's http.app); `what` starts the error messages.

    Raises:
        GraphLoadError: the spec is malformed, or the module or attribute is missing.
    """
    module, attr = _import_target(spec, what)
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise GraphLoadError(f"{what} {spec!r}: {_module_label(module, spec)} has no attribute {attr!r}.")
        target = getattr(target, part)
    return module, target


def _module_label(module: Any, spec: str) -> str:
    """The module as the spec names it: a file's path, not the internal name it is imported under."""
    return spec.strip().rpartition(":")[0] if module.__name__.startswith(MODULE_PREFIX) else module.__name__


def _import_target(spec: str, what: str):
    path_part, sep, attr = spec.strip().rpartition(":")
    if not sep or not path_part or not attr:
        raise GraphLoadError(f"{what} {spec!r} must look like 'package.module:attr' or './path.py:attr'.")
    if path_part.endswith(".py") or "/" in path_part:
        return _import_file(path_part, spec, what), attr
    try:
        return importlib.import_module(path_part), attr
    except ImportError as exc:
        raise GraphLoadError(f"{what} {spec!r}: cannot import {path_part}: {exc}") from exc


def _import_file(raw_path: str, spec: str, what: str):
    path = Path(raw_path).expanduser()
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, Path(settings.BASE_DIR) / path]
    found = next((p.resolve() for p in candidates if p.is_file()), None)
    if found is None:
        raise GraphLoadError(f"{what} {spec!r}: no file {raw_path} (looked in {', '.join(map(str, candidates))}).")
    name = MODULE_PREFIX + hashlib.sha256(str(found).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, found)
    if module_spec is None or module_spec.loader is None:
        raise GraphLoadError(f"{what} {spec!r}: {found} cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(module_spec)
    # Registered first: dataclasses and pickling look the module up by name while it executes.
    sys.modules[name] = module
    if str(found.parent) not in sys.path:
        sys.path.append(str(found.parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise GraphLoadError(f"{what} {spec!r}: {found} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _as_graph(target: Any, checkpointer: Any, spec: str) -> Pregel:
    if isinstance(target, Pregel):
        # The server owns persistence: whatever the module compiled in, threads live in our checkpointer.
        return target.copy(update={"checkpointer": checkpointer})
    if isinstance(target, StateGraph):
        return target.compile(checkpointer=checkpointer)
    if callable(target):
        try:
            accepts = "checkpointer" in inspect.signature(target).parameters
        except (TypeError, ValueError):
            accepts = False
        result = target(checkpointer=checkpointer) if accepts else target()
        if inspect.isawaitable(result):
            raise GraphLoadError(f"Graph spec {spec!r}: async factories are not supported.")
        if callable(result) and not isinstance(result, Pregel | StateGraph):
            raise GraphLoadError(f"Graph spec {spec!r}: the factory returned {type(result).__name__}, not a graph.")
        return _as_graph(result, checkpointer, spec)
    raise GraphLoadError(f"Graph spec {spec!r} names a {type(target).__name__}, not a graph.")


# ---------------------------------------------------------------------------------------------------------------
# The process-wide served graphs
# ---------------------------------------------------------------------------------------------------------------
_lock = threading.Lock()
# name -> spec, in the order given (the first is the default); None: CHAT_GRAPH alone.
_configured: dict[str, str] | None = None
_served: dict[str, ServedGraph] = {}


def configure(spec: str | None) -> None:
    """Serve `spec` alone instead of CHAT_GRAPH from now on (None: back to CHAT_GRAPH)."""
    configure_graphs({DEFAULT_GRAPH_NAME: spec} if spec else None)


def configure_graphs(specs: Mapping[str, str] | None) -> None:
    """Serve these graphs by name from now on, the first being the default (None: back to CHAT_GRAPH alone).

    Raises:
        GraphLoadError: `specs` is empty.
    """
    global _configured, _served
    if specs is not None and not specs:
        raise GraphLoadError("At least one graph must be served.")
    with _lock:
        _configured, _served = (dict(specs) if specs is not None else None), {}


def served_specs() -> dict[str, str]:
    """The served graphs' specs by name, the default first."""
    configured = _configured
    return dict(configured) if configured is not None else {DEFAULT_GRAPH_NAME: settings.CHAT_GRAPH}


def served_spec() -> str:
    """The default graph's spec."""
    return next(iter(served_specs().values()))


def graph_name_for(assistant_id: str | None, *, current: str | None = None) -> str:
    """The name of the graph to use: `assistant_id` when it names a served graph, else `current` (a thread's own
    graph) when that is still served, else the first graph ("_", a missing or an unknown id)."""
    specs = served_specs()
    for candidate in (assistant_id, current):
        if candidate and candidate in specs:
            return candidate
    return next(iter(specs))


def get_served_graph(assistant_id: str | None = None) -> ServedGraph:
    """The graph `assistant_id` names (the first one for "_", None or an unknown id), built on first use.

    A failure is not cached: the next run tries again.

    Raises:
        GraphLoadError, chat.agent.graph.ModelConfigurationError: as `load_graph` and the factory raise.
    """
    name = graph_name_for(assistant_id)
    with _lock:
        served = _served.get(name)
        if served is None:
            spec = served_specs()[name]
            served = _served[name] = replace(load_graph(spec, checkpointer=get_checkpointer()), key=name)
        return served

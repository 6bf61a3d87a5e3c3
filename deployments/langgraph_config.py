"""Reading and checking a project's `langgraph.json` before anything is installed or run."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from agentruntime.services import StoreConfigError, store_config_check
from deployments import langgraph_http

# Top-level packages of this service: a project module with one of these names would be shadowed.
SERVICE_PACKAGES = frozenset({"config", "core", "accounts", "tracing", "exports", "deployments", "agentruntime", "chat",
                              "agentserver", "agentauth"})
_MODULE_SPEC = re.compile(r"^[A-Za-z_][\w.]*$")
_ATTR = re.compile(r"^[A-Za-z_][\w.]*$")


class ConfigError(Exception):
    """langgraph.json is missing or wrong; the message says what to fix."""


@dataclass
class ProjectConfig:
    path: Path
    graphs: dict[str, str]
    # Requirement strings for pip, and local directories (absolute) the project depends on.
    requirements: list[str] = field(default_factory=list)
    local_dependencies: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The checked `http` section (deployments/langgraph_http.py); empty when absent.
    http: dict = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.path.parent

    def absolute_graphs(self) -> dict[str, str]:
        """Graph specs with `./file.py` paths made absolute, so they load from any working directory."""
        resolved = {}
        for name, spec in self.graphs.items():
            target, _, attr = spec.rpartition(":")
            if _is_path(target):
                target = str((self.directory / target).resolve())
            resolved[name] = f"{target}:{attr}"
        return resolved


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def load(*, source_root: Path, config_path: str) -> ProjectConfig:
    """Parse and check `config_path` (relative to `source_root`)."""
    root = source_root.resolve()
    path = (root / config_path).resolve()
    if not _inside(path, root):
        raise ConfigError(f"langgraph_config_path {config_path!r} points outside the project.")
    if not path.is_file():
        raise ConfigError(f"{config_path} was not found in the project.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config_path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{config_path} must hold a JSON object.")
    if data.get("node_version") and not data.get("python_version"):
        raise ConfigError("JavaScript graphs (node_version) are not supported by the local runner.")
    config = ProjectConfig(path=path, graphs=_graphs(data, path, root))
    try:
        store_config_check(data.get("store"))
    except StoreConfigError as exc:
        raise ConfigError(str(exc)) from None
    _dependencies(data, config, root)
    _python_version(data, config)
    try:
        config.http = langgraph_http.check(data.get("http"), config_dir=path.parent, root=root,
                                           warnings=config.warnings)
    except langgraph_http.HttpConfigError as exc:
        raise ConfigError(str(exc)) from None
    return config


def _graphs(data: dict, path: Path, root: Path) -> dict[str, str]:
    graphs = data.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        raise ConfigError("langgraph.json needs a non-empty \"graphs\" object: {\"agent\": \"./graph.py:graph\"}.")
    result = {}
    for name, entry in graphs.items():
        spec = entry.get("path") if isinstance(entry, dict) else entry
        if not isinstance(spec, str) or ":" not in spec:
            raise ConfigError(f"Graph {name!r}: expected \"./path.py:attr\" or \"package.module:attr\", got {spec!r}.")
        target, _, attr = spec.rpartition(":")
        if not _ATTR.match(attr):
            raise ConfigError(f"Graph {name!r}: {attr!r} is not a valid attribute name.")
        if _is_path(target):
            file = (path.parent / target).resolve()
            if not _inside(file, root):
                raise ConfigError(f"Graph {name!r}: {target} points outside the project.")
            if not file.is_file():
                raise ConfigError(f"Graph {name!r}: the file {target} does not exist.")
        elif not _MODULE_SPEC.match(target):
            raise ConfigError(f"Graph {name!r}: {target!r} is neither a file path nor a module name.")
        result[str(name)] = spec
    return result


def _dependencies(data: dict, config: ProjectConfig, root: Path) -> None:
    dependencies = data.get("dependencies")
    if not isinstance(dependencies, list) or not dependencies:
        raise ConfigError("langgraph.json needs a non-empty \"dependencies\" list, e.g. [\".\"].")
    for item in dependencies:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"Each dependency must be a non-empty string, got {item!r}.")
        item = item.strip()
        if item.startswith((".", "/")):
            directory = (config.directory / item).resolve()
            if not _inside(directory, root) or not directory.is_dir():
                raise ConfigError(f"Local dependency {item!r} is not a directory inside the project.")
            config.local_dependencies.append(directory)
            continue
        try:
            Requirement(item)
        except InvalidRequirement as exc:
            raise ConfigError(f"Dependency {item!r} is not a valid requirement: {exc}") from None
        config.requirements.append(item)
    for directory in config.local_dependencies:
        clashes = sorted(p.name.removesuffix(".py") for p in directory.iterdir()
                         if p.name.removesuffix(".py") in SERVICE_PACKAGES)
        if clashes:
            config.warnings.append(f"{directory.name}: module(s) {', '.join(clashes)} share a name with the "
                                   "service's own packages and cannot be imported by that name.")


def _python_version(data: dict, config: ProjectConfig) -> None:
    wanted = data.get("python_version")
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if wanted and str(wanted) != running:
        config.warnings.append(f"python_version {wanted} requested; the local runner uses Python {running}.")

"""The local build: a per-revision virtual environment, the project's dependencies, a graph check.

The environment is created by the service's own interpreter and sees the service's packages
through a `.pth` file (a venv made from a venv only inherits the *base* interpreter's packages
with --system-site-packages), so a project that lists nothing beyond LangGraph installs nothing.
Dependencies are installed with `pip install -c <constraints>`, the constraints pinning every
package of the service at its installed version: a project cannot replace a library the serving
code depends on, and a conflicting pin fails the build naming the package.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import sysconfig
import tempfile
from importlib import metadata
from pathlib import Path

from django.conf import settings
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from deployments.langgraph_config import ProjectConfig
from deployments.processes import LineWriter, run_logged


class BuildFailed(Exception):
    """The build cannot succeed; the message says why (it ends the revision BUILD_FAILED)."""


def service_site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def create_venv(venv: Path, *, extra_paths: list[Path]) -> Path:
    """Create the revision's environment; return its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", "--clear", str(venv)],
                   check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    # Service first: a project module must not shadow the code that serves it.
    lines = [str(settings.BASE_DIR), *service_site_dirs(), *(str(p) for p in extra_paths)]
    (Path(site) / "_langgraph_service.pth").write_text("\n".join(lines) + "\n")
    return python


def service_constraints() -> dict[str, str]:
    """Every distribution installed for the service, by canonical name, with its version."""
    pins: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.name  # the "Name" metadata, None when a broken install lacks it
        if name:
            pins.setdefault(canonicalize_name(name), dist.version)
    return pins


def write_constraints(path: Path, pins: dict[str, str]) -> None:
    path.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))


def check_pins(requirements: list[str], pins: dict[str, str]) -> None:
    """Fail fast, naming the package, when a requirement excludes the version the service runs."""
    for item in requirements:
        try:
            requirement = Requirement(item)
        except InvalidRequirement:  # a URL or pip option line: pip itself judges it
            continue
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned and requirement.specifier and not requirement.specifier.contains(pinned, prereleases=True):
            raise BuildFailed(f"Dependency {item!r} conflicts with the service's pinned "
                              f"{requirement.name}=={pinned}: this package cannot be changed by a deployment.")


def pip_targets(config: ProjectConfig) -> tuple[list[str], list[Path]]:
    """(pip arguments, directories for sys.path): packages are installed, plain folders are put on the path."""
    arguments = list(config.requirements)
    on_path = []
    for directory in config.local_dependencies:
        if (directory / "pyproject.toml").is_file() or (directory / "setup.py").is_file():
            arguments.append(str(directory))
        else:
            on_path.append(directory)
            if (directory / "requirements.txt").is_file():
                arguments += ["-r", str(directory / "requirements.txt")]
    return arguments, on_path


def requirement_lines(config: ProjectConfig) -> list[str]:
    """Every requirement the project names, including those in its requirements.txt files."""
    lines = list(config.requirements)
    for directory in config.local_dependencies:
        file = directory / "requirements.txt"
        if file.is_file():
            for raw in file.read_text(errors="replace").splitlines():
                line = raw.split("#", 1)[0].strip()
                if line and not line.startswith("-"):
                    lines.append(line)
    return lines


def pip_install(*, python: Path, arguments: list[str], constraints: Path, env: dict, cwd: Path, sink,
                should_stop) -> None:
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-input", "--progress-bar", "off",
               "-c", str(constraints), *shlex.split(settings.DEPLOY_PIP_ARGS), *arguments]
    sink.write("$ pip install " + " ".join(shlex.quote(a) for a in arguments))
    code = run_logged(command, env=env, cwd=cwd, sink=_PipLevels(sink), should_stop=should_stop,
                      timeout=settings.DEPLOY_BUILD_TIMEOUT_SECONDS)
    if code != 0:
        conflict = next((line for line in sink.tail if "conflict" in line.lower()), "")
        reason = conflict or next((line for line in reversed(sink.tail) if line.startswith("ERROR: ")), "")
        raise BuildFailed(f"Installing the dependencies failed (pip exited with {code}). {reason}".strip())


class _PipLevels:
    """pip's output on its way to the build log, its own `ERROR: ` lines at ERROR: the ones a failure is in."""

    def __init__(self, sink: LineWriter):
        self._sink = sink

    def write(self, line: str, level: str = "INFO") -> None:
        self._sink.write(line, "ERROR" if line.startswith("ERROR: ") else level)

    def flush(self) -> None:
        self._sink.flush()


def check_graphs(*, python: Path, config: ProjectConfig, env: dict, sink, should_stop) -> None:
    """Import and compile every graph in a subprocess of the revision's environment.

    Its failure report (the reason, then the traceback of the project's own code) comes in a file of its own and is
    logged at ERROR; the lines the project printed meanwhile stay INFO.
    """
    with tempfile.TemporaryDirectory(prefix="check-graphs-") as scratch:
        report = Path(scratch) / "report.txt"
        command = [str(python), str(Path(settings.BASE_DIR) / "manage.py"), "check_graphs",
                   "--config", str(config.path), "--report", str(report)]
        code = run_logged(command, env=env, cwd=config.directory, sink=sink, should_stop=should_stop,
                          timeout=settings.DEPLOY_BUILD_TIMEOUT_SECONDS)
        lines = report.read_text(errors="replace").splitlines() if report.is_file() else []
    if code == 0:
        return
    for line in lines[1:]:
        sink.write(line, "ERROR")
    sink.flush()
    # The report's first line names what failed ("Graph 'agent' failed to load: src/agent/graph.py, line 3: …").
    raise BuildFailed(lines[0] if lines else f"Loading the project failed (exit code {code}): see the build log.")

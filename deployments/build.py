"""The local build: a per-revision virtual environment, the project's dependencies, a graph check.

The environment is created by the service's own interpreter and sees the service's code and its runtime packages
(deployments/runtime_site.py) through a `.pth` file, so a project that lists nothing beyond LangGraph installs
nothing, and nothing else installed beside the service is visible. Dependencies are installed with
`pip install -c <constraints>`, the constraints pinning every runtime package at its installed version: a project
cannot replace a library the serving code depends on, and a conflicting pin fails the build with one line naming
the package, the version the runtime runs and what to write instead.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from deployments import runtime_site
from deployments.langgraph_config import ProjectConfig
from deployments.processes import LineWriter, run_logged


class BuildFailed(Exception):
    """The build cannot succeed; the message says why (it ends the revision BUILD_FAILED)."""


def create_venv(venv: Path, *, extra_paths: list[Path]) -> Path:
    """Create the revision's environment; return its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)],
                   check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    # Service first: a project module must not shadow the code that serves it.
    lines = [str(settings.BASE_DIR), str(runtime_site.ensure_site()), *(str(p) for p in extra_paths)]
    (Path(site) / "_langgraph_service.pth").write_text("\n".join(lines) + "\n")
    return python


def write_constraints(path: Path, pins: dict[str, str]) -> None:
    path.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))


def supported_range(version: str) -> str:
    """A range that admits the runtime's version and its later patch releases (what a project may write)."""
    release = version.split("+", 1)[0].split(".")
    if len(release) < 2 or not all(part.isdigit() for part in release[:2]):
        return f"=={version}"
    return f">={version},<{release[0]}.{int(release[1]) + 1}"


def pin_conflict(package: str, wanted: str, pinned: str) -> str:
    return (f"{wanted} conflicts with the runtime, which runs {package} {pinned}: write "
            f"{package}{supported_range(pinned)} (or leave {package} out; the runtime provides it).")


def check_pins(requirements: list[str], pins: dict[str, str]) -> None:
    """Fail fast, in one line, when a requirement excludes the version the runtime runs."""
    for item in requirements:
        try:
            requirement = Requirement(item)
        except InvalidRequirement:  # a URL or pip option line: pip itself judges it
            continue
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned and requirement.specifier and not requirement.specifier.contains(pinned, prereleases=True):
            raise BuildFailed(pin_conflict(requirement.name, f"Dependency {item!r}", pinned))


# pip's report of a conflict ("The conflict is caused by:"): which package needs which version of another.
_DEPENDS = re.compile(r"^\s*(?P<who>\S+ \S+) depends on (?P<what>[A-Za-z0-9._-]+)(?P<spec>[^;\s]*)")


def transitive_conflict(lines: list[str], pins: dict[str, str]) -> str | None:
    """One line for a conflict pip found between a project package's own needs and a runtime package."""
    for line in lines:
        found = _DEPENDS.match(line)
        if not found:
            continue
        name = canonicalize_name(found["what"])
        pinned = pins.get(name)
        if pinned is None:
            continue
        try:
            requirement = Requirement(found["what"] + found["spec"])
        except InvalidRequirement:
            continue
        if not requirement.specifier.contains(pinned, prereleases=True):
            return (f"{found['who']} needs {found['what']}{found['spec']}, but the runtime runs {found['what']} "
                    f"{pinned}: choose a version of {found['who'].split()[0]} that accepts {found['what']} {pinned}.")
    return None


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
        explained = transitive_conflict(list(sink.tail), runtime_site.runtime_pins())
        if explained:
            raise BuildFailed(explained)
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

"""Memory limits on the local runner's serving processes, where the operating system lets this service set them.

A limit is a memory cgroup of the process's own, made under this worker's cgroup: cgroup v2 when the worker's cgroup
is delegated (it may enable the memory controller for its children), else the v1 memory controller's hierarchy when
it is mounted writable. The child joins its cgroup between fork and exec, so everything it ever allocates counts.
Without a writable cgroup the child limits itself with RLIMIT_DATA, a cap on its data segment (address space, not
resident memory: looser, but it still stops a runaway process). The runner reads back what applied (`describe`) and
says it in the revision's deploy log.

Cgroups are removed when their process exits; those of a worker that died (its processes died with it) are removed
by the next worker that makes one, recognised by the worker's pid in their name.
"""

from __future__ import annotations

import itertools
import os
import resource
from pathlib import Path

from core.process_identity import pid_alive

_BASE = "langgraph-deployments"
_counter = itertools.count()


class MemoryLimit:
    """A memory limit for one child process: prepared by the parent, entered by the child before it runs anything
    (`enter`, its preexec), read back once it runs (`describe`), removed after it exits (`release`)."""

    def __init__(self, name: str, megabytes: int):
        self.bytes = megabytes * 1024 * 1024
        self.cgroup: Path | None = None
        self.version = 0
        self.why_no_cgroup = ""
        cgroup_name = f"{name}-w{os.getpid()}-{next(_counter)}"
        for version, prepare in ((2, _prepare_v2), (1, _prepare_v1)):
            try:
                self.cgroup = prepare(cgroup_name, self.bytes)
            except OSError as exc:
                self.why_no_cgroup = f"cgroup v{version}: {exc.strerror or exc}"
                continue
            if self.cgroup is not None:
                self.version = version
                self._procs = str(self.cgroup / "cgroup.procs")  # made here: the child only writes to it
                return
        self.why_no_cgroup = self.why_no_cgroup or ("the memory controller is neither delegated to this worker's "
                                                    "cgroup v2 nor mounted writable as cgroup v1")

    def enter(self) -> None:
        """Runs in the child between fork and exec (system calls only): join the cgroup, else cap RLIMIT_DATA."""
        if self.cgroup is not None:
            try:
                fd = os.open(self._procs, os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
                return
            except OSError:
                pass
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (self.bytes, self.bytes))
        except (OSError, ValueError):  # a hard limit below ours: the process keeps it, `describe` says so
            pass

    def describe(self, pid: int) -> str | None:
        """How the limit applies to the running process `pid`, as read back from the OS; None if it does not."""
        if self.cgroup is not None and self.cgroup in process_cgroups(pid):
            name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
            return f"cgroup v{self.version} ({self.cgroup / name})"
        if rlimit_data(pid) == self.bytes:
            reason = f"; no writable memory cgroup ({self.why_no_cgroup})" if self.why_no_cgroup else ""
            return f"RLIMIT_DATA, which caps the data segment rather than resident memory{reason}"
        return None

    def release(self) -> None:
        """Remove the cgroup once its process has exited (a cgroup with processes cannot be removed)."""
        if self.cgroup is not None:
            _rmdir(self.cgroup)


def process_cgroups(pid: int) -> list[Path]:
    """The directories of the cgroups `pid` is in (v2, and v1's memory hierarchy), as mounted here."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        mount = _mount("cgroup2") if controllers == "" else (
            _mount("cgroup", "memory") if "memory" in controllers.split(",") else None)
        if mount is not None:
            found.append(_under(mount, path))
    return found


def rlimit_data(pid: int) -> int | None:
    """The soft RLIMIT_DATA of `pid` in bytes (None: unlimited or unknown), from /proc/<pid>/limits."""
    try:
        lines = Path(f"/proc/{pid}/limits").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("Max data size"):
            soft = line[len("Max data size"):].split()[0]
            return int(soft) if soft.isdigit() else None
    return None


def _prepare_v2(name: str, limit: int) -> Path | None:
    mount = _mount("cgroup2")
    own = _own_cgroup("")
    if mount is None or own is None:
        return None
    parent = _under(mount, own)
    if "memory" not in _read(parent / "cgroup.controllers").split():
        return None  # the memory controller is not given to this cgroup (bound to v1, or not delegated)
    _enable_memory(parent)  # refused (EBUSY) when this cgroup holds processes and is not a delegated root
    base = parent / _BASE
    base.mkdir(exist_ok=True)
    _enable_memory(base)
    _sweep(base)
    cgroup = base / name
    cgroup.mkdir()
    try:
        (cgroup / "memory.max").write_text(str(limit))
        _write_optional(cgroup / "memory.swap.max", "0")  # a limit on memory, not on memory plus swap
    except OSError:
        _rmdir(cgroup)
        raise
    return cgroup


def _prepare_v1(name: str, limit: int) -> Path | None:
    mount = _mount("cgroup", "memory")
    own = _own_cgroup("memory")
    if mount is None or own is None:
        return None
    base = _under(mount, own) / _BASE
    base.mkdir(exist_ok=True)
    _sweep(base)
    cgroup = base / name
    cgroup.mkdir()
    try:
        (cgroup / "memory.limit_in_bytes").write_text(str(limit))
        _write_optional(cgroup / "memory.memsw.limit_in_bytes", str(limit))  # swap counted in, where accounted
    except OSError:
        _rmdir(cgroup)
        raise
    return cgroup


def _enable_memory(cgroup: Path) -> None:
    if "memory" not in _read(cgroup / "cgroup.subtree_control").split():
        (cgroup / "cgroup.subtree_control").write_text("+memory")


def _sweep(base: Path) -> None:
    """Remove the cgroups that workers no longer alive made (their processes died with them)."""
    for entry in base.iterdir():
        worker = entry.name.rpartition("-w")[2].partition("-")[0]
        if entry.is_dir() and worker.isdigit() and int(worker) != os.getpid() and not pid_alive(int(worker)):
            _rmdir(entry)


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path in the v2 hierarchy (controller "") or in the v1 hierarchy of `controller`."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller == "" and controllers == "") or (controller and controller in controllers.split(",")):
            return path
    return None


def _mount(fstype: str, option: str = "") -> tuple[Path, str] | None:
    """(mount point, root of the hierarchy mounted there) of the first cgroup mount of `fstype` with `option`."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _, tail = line.partition(" - ")
        parts, tail_parts = fields.split(), tail.split()
        if len(parts) < 5 or len(tail_parts) < 3 or tail_parts[0] != fstype:
            continue
        if option and option not in tail_parts[2].split(","):
            continue
        if "rw" not in parts[5].split(","):
            continue
        return Path(parts[4]), parts[3]
    return None


def _under(mount: tuple[Path, str], path: str) -> Path:
    """The directory of cgroup `path` under a mount of its hierarchy (whose root may itself be a cgroup)."""
    point, root = mount
    relative = path[len(root):] if root != "/" and path.startswith(root) else path
    return point / relative.lstrip("/")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write_optional(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass

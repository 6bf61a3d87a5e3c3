"""Who this process is, for the rows it owns (chat runs): a stable identity and a unique instance.

`serve` gives each child it supervises a stable identity that survives the child's restart, e.g.
"web1:serve-8000:web-0" (PROCESS_IDENTITY). A restarted child therefore knows that whatever was left running under
its identity belonged to its dead predecessor, and can fail it at once instead of waiting for a heartbeat to go
stale. A process started any other way (plain Daphne, tests) has no such identity: it gets a unique one, and what
it leaves behind is found by the sweeper.

The instance ("host:pid:token") is unique to one process's lifetime, stable identity or not, so that a process
never mistakes its own rows for its predecessor's, and a process on this host can tell whether another one is
still running.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from functools import cache
from pathlib import Path

from django.conf import settings


@cache
def instance() -> str:
    """This process's unique name: host, pid and a random token (a pid is reused, the token is not)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def identity() -> str:
    """The stable identity its supervisor gave this process, or else its unique instance name."""
    return settings.PROCESS_IDENTITY or instance()


def is_stable() -> bool:
    """Whether the identity outlives this process (a supervisor restarts it under the same name)."""
    return bool(settings.PROCESS_IDENTITY)


def instance_state(name: str) -> str:
    """"gone" when `name` is an instance of this host whose process has exited, "alive" when its process runs,
    "unknown" for an instance of another host (or a name that is not an instance): that cannot be checked here."""
    host, _, rest = name.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return "unknown"
    pid = int(pid_text)
    if pid == os.getpid():
        # The pid of a predecessor that this process's pid reuses: only our own instance is alive.
        return "alive" if name == instance() else "gone"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        return "alive"
    return "gone" if _is_zombie(pid) else "alive"


def _is_zombie(pid: int) -> bool:
    # A killed child stays in the process table until its parent reaps it; it runs nothing meanwhile.
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (killed, not yet reaped by its parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def stop_process(process: subprocess.Popen, timeout: float) -> None:
    """Terminate `process` if it still runs, and kill it if it has not exited `timeout` seconds later."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

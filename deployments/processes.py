"""Child processes of the pipeline (git, pip, graph checks) with their output in a revision's log.

Every child gets its own process group, so stopping it also stops what it started (pip runs
build backends), and is tied to the worker with PR_SET_PDEATHSIG: a worker that dies takes its
children with it instead of leaving a half-done build running.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

log = logging.getLogger("deployments.processes")

MAX_LINE_CHARS = 4000
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: ask Linux to SIGTERM this child when the process that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: children outlive a crashed worker
        pass


def popen(command: list[str], *, env: dict[str, str], cwd: Path, stdout=subprocess.PIPE,
          preexec: Callable[[], None] | None = None) -> subprocess.Popen:
    """Start `command` in a session of its own, tied to this process's life; `preexec` also runs in the child before
    the exec (e.g. deployments.runners.limits.MemoryLimit.enter)."""
    def prepare() -> None:
        die_with_parent()
        if preexec is not None:
            preexec()

    return subprocess.Popen(command, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=prepare)


def stop_group(process: subprocess.Popen, *, grace: float = 5.0) -> int | None:
    """SIGTERM the child's process group, then SIGKILL it if it has not exited after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    return process.poll()


class LineWriter(Protocol):
    """Where run_logged sends a child's lines: a LineSink, or a filter in front of one."""

    def write(self, line: str, level: str = "INFO") -> None: ...

    def flush(self) -> None: ...


class LineSink:
    """Output lines on their way to a revision's log, written in batches; keeps the last few for errors."""

    def __init__(self, write_batch: Callable[[list[tuple[str, str]]], None], *, keep: int = 40):
        self._write_batch = write_batch
        self._pending: list[tuple[str, str]] = []
        self.tail: deque[str] = deque(maxlen=keep)

    def write(self, line: str, level: str = "INFO") -> None:
        line = line.rstrip("\r\n")[:MAX_LINE_CHARS]
        self._pending.append((level, line))
        self.tail.append(line)
        if len(self._pending) >= 200:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            self._write_batch(batch)


# A serving process logs through core's LOGGING format, "%(asctime)s %(levelname)s %(name)s %(message)s".
_RECORD_HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


class RecordLevels:
    """The log level of each output line of a serving process, read from its logging header.

    A line without a header continues the record before it (a logged traceback spans many lines) and keeps its
    level; an uncaught exception's "Traceback" starts an ERROR; anything before the first header is INFO.
    """

    def __init__(self) -> None:
        self.level = "INFO"

    def of(self, line: str) -> str:
        header = _RECORD_HEADER.match(line)
        if header:
            self.level = header.group(1)
        elif line.startswith("Traceback (most recent call last):"):
            self.level = "ERROR"
        return self.level


def _read_lines(stream, lines: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            lines.put(raw.decode("utf-8", errors="replace"))
    finally:
        lines.put(None)


def run_logged(command: list[str], *, env: dict[str, str], cwd: Path, sink: LineWriter,
               should_stop: Callable[[], str | None], timeout: float) -> int:
    """Run `command`, sending each output line to `sink`; return its exit code.

    Stops the child (and raises StepStopped) when `should_stop()` gives a reason or `timeout` passes.
    """
    process = popen(command, env=env, cwd=cwd)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            _drain(lines, sink)
            sink.flush()
            if process.poll() is not None and not reader.is_alive():
                break
            reason = should_stop()
            if reason is None and time.monotonic() > deadline:
                reason = f"{Path(command[0]).name} did not finish within {int(timeout)} seconds"
            if reason:
                stop_group(process)
                raise StepStopped(reason)
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            stop_group(process)
        reader.join(timeout=5)
        _drain(lines, sink)
        sink.flush()
        if process.stdout is not None:  # always a pipe here (popen's default)
            process.stdout.close()
    return process.returncode


def _drain(lines: queue.Queue, sink: LineWriter) -> None:
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return
        if line is not None:
            sink.write(line)


class StepStopped(Exception):
    """A step was cut short: interrupted, superseded, timed out or its worker lost the lease."""

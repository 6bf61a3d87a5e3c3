"""A project's own error as its author reads it: their files relative to the project with the line, and only the
frames of their code.

A graph that fails to load raises inside this service's loader (agentruntime/served_graphs.py imports the file under an
internal module name, from an absolute path under the revision's directory). None of that helps the author: the
report names `src/agent/graph.py, line 12`, shows the traceback from their first frame on, and says what was raised.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from agentruntime.selectors import MODULE_PREFIX, GraphLoadError


@dataclass(frozen=True)
class UserError:
    reason: str  # one line: "graph.py, line 19: SyntaxError: expected ':'"
    traceback: list[str] = field(default_factory=list)  # the project's frames only; empty when none ran


def user_error(exc: BaseException, *, project: Path) -> UserError:
    """What `exc`, raised while loading the project in `project`, says to the project's author."""
    raised = _raised_by_project(exc, project)
    if raised is None:
        # One of the loader's own errors (no such file or attribute, not a graph, …): its message is the reason.
        text = str(exc) if isinstance(exc, GraphLoadError) else _message(exc, project)
        return UserError(relative_text(text, project))
    frames = _user_frames(raised, project)
    lines = []
    if frames:
        lines.append("Traceback (most recent call last):")
        for frame in frames:
            lines.append(f'  File "{_relative(frame.filename, project)}", line {frame.lineno}, in {frame.name}')
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
    location = f"{_relative(frames[-1].filename, project)}, line {frames[-1].lineno}: " if frames else ""
    if isinstance(raised, SyntaxError) and _inside(raised.filename or "", project):
        location = f"{_relative(raised.filename or '', project)}, line {raised.lineno}: "
        lines += _syntax_error_lines(raised, project)
    message = _message(raised, project)
    lines.append(message)
    return UserError(location + message, lines)


def relative_text(text: str, project: Path) -> str:
    """`text` without the project's absolute directory in the paths it names, nor the loader's module names."""
    text = text.replace(f"{project.resolve()}/", "").replace(f"{project}/", "")
    text = re.sub(rf"\b{MODULE_PREFIX}[0-9a-f]{{12}}\.", "", text)
    return re.sub(rf"\b{MODULE_PREFIX}[0-9a-f]{{12}}\b", "the module", text)


def _raised_by_project(exc: BaseException, project: Path) -> BaseException | None:
    """The error the project's code raised (the first of `exc` and its causes that went through the project's code,
    or a syntax error in one of its files), under the loader's GraphLoadError that wraps it; None if none did."""
    current: BaseException | None = exc
    while current is not None:
        if _user_frames(current, project):
            return current
        if isinstance(current, SyntaxError) and _inside(current.filename or "", project):
            return current
        current = current.__cause__
    return None


def _user_frames(exc: BaseException, project: Path) -> list[traceback.FrameSummary]:
    return [frame for frame in traceback.extract_tb(exc.__traceback__) if _inside(frame.filename, project)]


def _inside(filename: str, project: Path) -> bool:
    if not Path(filename).is_absolute():  # "<frozen importlib._bootstrap>", "<string>": no file of the project
        return False
    try:
        Path(filename).resolve().relative_to(project.resolve())
    except (ValueError, OSError):
        return False
    return True


def _relative(filename: str, project: Path) -> str:
    if not _inside(filename, project):
        return filename
    return str(Path(filename).resolve().relative_to(project.resolve()))


def _message(exc: BaseException, project: Path) -> str:
    text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    name = type(exc).__name__
    return relative_text(f"{name}: {text}" if text else name, project)


def _syntax_error_lines(exc: SyntaxError, project: Path) -> list[str]:
    """The offending line and a caret under it, as Python prints a SyntaxError."""
    lines = [f'  File "{_relative(exc.filename or "", project)}", line {exc.lineno}']
    if exc.text:
        text = exc.text.rstrip("\n")
        stripped = text.lstrip()
        lines.append(f"    {stripped}")
        if exc.offset:
            indent = len(text) - len(stripped)
            lines.append("    " + " " * max(exc.offset - 1 - indent, 0) + "^")
    return lines

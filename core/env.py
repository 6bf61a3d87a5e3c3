"""Typed environment variables for the settings modules: one reader per type.

An unset or empty variable takes its default. A value that cannot be read stops the process with one line that
names the variable and says what it must be, with no traceback: the operator needs the name, not the stack.
This module imports nothing from Django, so a settings module can use it before Django is configured.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from typing import NoReturn

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def refuse_to_start(problem: str) -> NoReturn:
    """Stop the process with one line on stderr: `Refusing to start: <problem>`."""
    sys.stderr.write(f"Refusing to start: {problem}\n")
    raise SystemExit(1)


def _raw(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty (the default applies)."""
    value = os.environ.get(name)
    return None if value is None or value == "" else value


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    refuse_to_start(f"{name} must be true or false, not {raw!r}.")


def env_int(name: str, default: int) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        refuse_to_start(f"{name} must be a whole number, not {raw!r}.")


def env_float(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return float(default)
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        refuse_to_start(f"{name} must be a number, not {raw!r}.")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated list; blanks around and between the items are dropped."""
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_pairs(name: str) -> dict[str, str]:
    """A comma-separated list of `key=value` pairs (`destination-validation=20/min,default=1000/min`)."""
    pairs = {}
    for item in env_list(name):
        key, equals, value = item.partition("=")
        if not equals or not key.strip() or not value.strip():
            refuse_to_start(f"{name} must be a comma-separated list of name=value pairs, not {item!r}.")
        pairs[key.strip()] = value.strip()
    return pairs


def env_choice(name: str, default: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    raw = _raw(name)
    if raw is None:
        return default
    if raw not in choices:
        refuse_to_start(f"{name} must be one of {', '.join(choices)}, not {raw!r}.")
    return raw

"""The shape of langgraph.json's `store` object (and CHAT_STORE_CONFIG), checked without loading anything.

Kept apart from agentruntime/store/config.py, which loads the embedding function and with it LangChain: checking a
project's langgraph.json (deployments) and scheduling the TTL sweep (agentruntime/jobs.py, in every worker) need
neither.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

SWEEP_JOB = "chat.sweep_expired_store_items"
DEFAULT_SWEEP_SECONDS = 60.0


class StoreConfigError(ValueError):
    """The `store` object of langgraph.json (or CHAT_STORE_CONFIG) is wrong; the message says what to fix."""


def check(raw: Any) -> None:
    """Raise StoreConfigError unless `raw` is a valid `store` object (without loading its embedding function)."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise StoreConfigError("\"store\" must be an object with \"index\" and/or \"ttl\".")
    _check_index(raw.get("index"))
    _check_ttl(raw.get("ttl"))


def _check_index(index: Any) -> None:
    if index is None:
        return
    if not isinstance(index, dict):
        raise StoreConfigError("store.index must be an object: {\"embed\": ..., \"dims\": ..., \"fields\": [...]}.")
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise StoreConfigError("store.index.dims must be a positive integer (the embeddings' length).")
    embed = index.get("embed")
    if not isinstance(embed, str) or ":" not in embed:
        raise StoreConfigError("store.index.embed must be \"provider:model\" or \"./path.py:function\".")
    fields = index.get("fields")
    if fields is not None and (not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields)):
        raise StoreConfigError("store.index.fields must be a list of field paths, e.g. [\"text\", \"tags[*]\"].")


def _check_ttl(ttl: Any) -> None:
    if ttl is None:
        return
    if not isinstance(ttl, dict):
        raise StoreConfigError("store.ttl must be an object: {\"default_ttl\": minutes, ...}.")
    for name in ("default_ttl", "sweep_interval_minutes"):
        value = ttl.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise StoreConfigError(f"store.ttl.{name} must be a positive number of minutes.")
    if not isinstance(ttl.get("refresh_on_read", True), bool):
        raise StoreConfigError("store.ttl.refresh_on_read must be true or false.")


def sweep_seconds(raw: dict | None) -> float:
    """How often the sweep of expired items runs for a `store` object: its ttl.sweep_interval_minutes, else 60 s."""
    minutes = ((raw or {}).get("ttl") or {}).get("sweep_interval_minutes")
    return float(minutes) * 60 if minutes else DEFAULT_SWEEP_SECONDS


def settings_sweep_seconds() -> float:
    """sweep_seconds of CHAT_STORE_CONFIG, read when the job is registered (a wrong value fails the first store)."""
    try:
        raw = json.loads(settings.CHAT_STORE_CONFIG or "null")
        check(raw)
    except ValueError:
        return DEFAULT_SWEEP_SECONDS
    return sweep_seconds(raw)

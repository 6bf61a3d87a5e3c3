"""Hooks awaited after every chat run ended, by dotted path: what other apps do then (the Agent Server API calls
webhooks and removes temporary threads). Apps register them in AppConfig.ready; paths, so that registering imports
nothing heavy into processes that never execute a chat run."""

from __future__ import annotations

# "package.module:function" or "package.module.function"; each is awaited as `function(run_request, status)`.
AFTER_RUN: list[str] = []


def after_run(path: str) -> None:
    if path not in AFTER_RUN:
        AFTER_RUN.append(path)

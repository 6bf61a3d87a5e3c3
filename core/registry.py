"""Where apps declare their background job handlers, periodic jobs and what `serve` sets up, so that core, the
lowest layer, runs them without importing any app.

    @job_handler("exports.run")
    def run_export(job, lease): ...

    @periodic("exports.purge_credentials", every_seconds=3600)
    def purge(): ...

    @serve_setup("accounts.demo_credentials")
    def demo_credentials(out): ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Handler:
    queue: str
    func: Callable


@dataclass(frozen=True)
class Periodic:
    name: str
    every_seconds: float
    func: Callable


HANDLERS: dict[str, Handler] = {}
PERIODICS: dict[str, Periodic] = {}
# Long-running loops `run_worker` runs beside its jobs, each on a thread of its own: func(stop_event).
SERVICES: dict[str, Callable] = {}
# What `serve` ensures after migrating (not with --no-setup), in registration order: func(out) writes what it did.
SERVE_SETUPS: dict[str, Callable] = {}


def job_handler(kind: str, *, queue: str = "default"):
    def register(func: Callable) -> Callable:
        HANDLERS[kind] = Handler(queue=queue, func=func)
        return func

    return register


def periodic(name: str, *, every_seconds: float):
    def register(func: Callable) -> Callable:
        PERIODICS[name] = Periodic(name=name, every_seconds=every_seconds, func=func)
        return func

    return register


def periodic_reschedule(name: str, *, every_seconds: float) -> None:
    """Run the registered periodic job `name` every `every_seconds` from now on (a served project's langgraph.json
    sets some intervals); nothing when no such job is registered in this process."""
    if name in PERIODICS:
        PERIODICS[name] = replace(PERIODICS[name], every_seconds=every_seconds)


def worker_service(name: str):
    """Register `func(stop: threading.Event)`, run by every `run_worker` until it stops (it may return at once)."""
    def register(func: Callable) -> Callable:
        SERVICES[name] = func
        return func

    return register


def serve_setup(name: str):
    """Register `func(out)`, run by `manage.py serve` before it starts the server: it makes sure something exists
    (a demo workspace, an admin user) and writes a line per thing to `out` for the person who started it."""
    def register(func: Callable) -> Callable:
        SERVE_SETUPS[name] = func
        return func

    return register


class RetryLater(Exception):
    """Raised by a handler to put its job back in the queue after `delay` seconds."""

    def __init__(self, delay: float, reason: str = ""):
        self.delay = delay
        self.reason = reason
        super().__init__(reason or f"retry in {delay}s")

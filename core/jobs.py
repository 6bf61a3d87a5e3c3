"""Jobs of the core app: small built-ins used to check that workers are alive."""

from __future__ import annotations

import time

from core.registry import job_handler


@job_handler("core.noop")
def noop(job, lease) -> None:
    """Do nothing: lets an operator (or a test) check that a worker picks jobs up."""


@job_handler("core.sleep")
def sleep(job, lease) -> None:
    """Sleep for payload["seconds"], checking the lease: a stand-in for long work."""
    deadline = time.monotonic() + float(job.payload.get("seconds", 1))
    while time.monotonic() < deadline and not lease.lost:
        time.sleep(0.1)

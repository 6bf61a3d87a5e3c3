"""The runner the pipeline uses. Only the local-process runner exists (docs/kubernetes-runner.md designs the next)."""

from __future__ import annotations

from functools import cache

from deployments.runners.base import Runner, StepContext, StepFailed, Upstream

__all__ = ["Runner", "StepContext", "StepFailed", "Upstream", "get_runner"]


@cache
def get_runner() -> Runner:
    """One runner per process: the local runner keeps its child processes in memory."""
    from deployments.runners.local import LocalProcessRunner

    return LocalProcessRunner()

"""The runners that build and serve revisions. Only the local-process runner exists (docs/kubernetes-runner.md
designs the next); deployments.services holds the process's one runner."""

from __future__ import annotations

from deployments.runners.base import ReplicaHealth, RevisionRecords, Runner, StepContext, StepFailed, Upstream
from deployments.runners.local import LocalProcessRunner

__all__ = ["ReplicaHealth", "RevisionRecords", "Runner", "StepContext", "StepFailed", "Upstream", "create_runner"]


def create_runner(records: RevisionRecords) -> Runner:
    """The runner this install uses, writing what it learns through `records`."""
    return LocalProcessRunner(records)

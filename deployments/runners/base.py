"""The interface between the revision pipeline and whatever builds and serves revisions.

The pipeline (deployments/pipeline.py) owns statuses, retries and logs; a runner only does the
work of each step and reports failure with StepFailed. What a runner learns about a revision (its
commit, where it is served, its server's output) it hands to the RevisionRecords it was created
with, which deployments.services implements: services import runners, never the reverse.
docs/kubernetes-runner.md designs a second implementation.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from deployments.models import Revision
from deployments.processes import LineSink


class StepFailed(Exception):
    """The step cannot succeed; the message is the reason shown in the log and status."""


@dataclass
class StepContext:
    """What a runner gets for one step: the revision, its log, and a way to learn that it must stop."""

    revision: Revision
    sink: LineSink
    should_stop: Callable[[], str | None]

    def log(self, message: str, level: str = "INFO") -> None:
        self.sink.write(message, level)
        self.sink.flush()


@dataclass(frozen=True)
class Upstream:
    """Where the proxy sends a deployment's traffic (one URL per replica, any of which serves any request), and the
    header that proves it came from the proxy."""

    base_urls: tuple[str, ...]
    headers: dict[str, str]


@dataclass(frozen=True)
class ReplicaHealth:
    """One replica of a revision as the reconciler sees it: answering its health check, or at least running."""

    index: int
    healthy: bool
    running: bool


class RevisionRecords(ABC):
    """Where a runner writes what it learns about a revision (deployments.services implements it)."""

    @abstractmethod
    def commit_set(self, *, revision: Revision, sha: str) -> None:
        """Record the commit a revision's source was fetched at."""

    @abstractmethod
    def serving_set(self, *, revision: Revision, host: str = "", token: str = "",
                    replicas: list[dict] | None = None) -> None:
        """Record where a revision is served: its replicas' {"port", "pid"} by index (all empty: it is not served)."""

    @abstractmethod
    def replica_set(self, *, revision: Revision, index: int, port: int, pid: int) -> None:
        """Record where one replica of a revision serves after it was restarted alone."""

    @abstractmethod
    def log_sink(self, *, revision_id: uuid.UUID, type: str) -> LineSink:
        """A sink for lines of a revision's build or deploy log that never raises (the revision may be gone)."""


class Runner(Protocol):
    """What the pipeline asks of a runner (LocalProcessRunner is one), which writes what it learns to the
    RevisionRecords it was created with."""

    name: str

    def require(self, source: str) -> None:
        """Raise BadRequest (naming the runner) if new revisions of `source` cannot be built and served."""

    def fetch_source(self, ctx: StepContext) -> None:
        """Put the revision's source where the build will read it."""

    def build(self, ctx: StepContext) -> None:
        """Turn the source into something startable; raise StepFailed with the reason."""

    def start(self, ctx: StepContext) -> None:
        """Start serving the revision (not yet receiving traffic) and record where."""

    def wait_healthy(self, ctx: StepContext) -> None:
        """Return once the started revision answers its health check; raise StepFailed otherwise."""

    def is_healthy(self, revision: Revision) -> bool:
        """Whether the revision is being served right now, by all its replicas."""

    def is_running(self, revision: Revision) -> bool:
        """Whether any server of the revision exists at all (it may be too busy to answer its health check)."""

    def replica_health(self, revision: Revision) -> list[ReplicaHealth]:
        """Each replica the revision should have (resource_spec.min_scale), healthy, running or gone."""

    def restart_replica(self, ctx: StepContext, index: int) -> None:
        """Start one replica of a served revision again, alone, and return once it is healthy (StepFailed if not)."""

    def stop(self, revision: Revision) -> None:
        """Stop serving the revision (no error if it is not served)."""

    def drain(self, revision: Revision, *, timeout: float) -> int:
        """Wait until a revision that no longer gets traffic has finished its requests in flight, or `timeout`
        passes; return how many are still open."""

    def discard(self, revision: Revision) -> None:
        """Remove what the build left behind for a revision that will not be served again."""

    def legacy_database(self, revision: Revision) -> Path | None:
        """The database file a revision of an older version of this service served from on its own, if any."""

    def upstream(self, revision: Revision) -> Upstream | None:
        """Where the active revision is served, or None if it is not."""

    def stop_strays(self, keep: set) -> None:
        """Stop processes this runner started for revisions not in `keep` (ids); a runner without local children
        has none."""

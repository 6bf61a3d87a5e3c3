"""The revision status machine: which status may follow which.

This table is the only definition of legal transitions; `services.revision_transition` is the
only writer of a revision's status and applies it with a conditional UPDATE, so a request (an
interrupt) and a worker (a build step) racing on one revision cannot both win.
"""

from __future__ import annotations

from django.db import models


class RevisionStatus(models.TextChoices):
    # The real enum, in the order of the control plane's OpenAPI spec.
    CREATING = "CREATING"
    QUEUED = "QUEUED"
    AWAITING_BUILD = "AWAITING_BUILD"
    BUILDING = "BUILDING"
    AWAITING_DEPLOY = "AWAITING_DEPLOY"
    DEPLOYING = "DEPLOYING"
    CREATE_FAILED = "CREATE_FAILED"
    BUILD_FAILED = "BUILD_FAILED"
    DEPLOY_FAILED = "DEPLOY_FAILED"
    DEPLOYED = "DEPLOYED"
    SKIPPED = "SKIPPED"
    INTERRUPTED = "INTERRUPTED"
    UNKNOWN = "UNKNOWN"


S = RevisionStatus

FAILED = frozenset({S.CREATE_FAILED, S.BUILD_FAILED, S.DEPLOY_FAILED})
TERMINAL = frozenset({S.CREATE_FAILED, S.BUILD_FAILED, S.DEPLOY_FAILED, S.DEPLOYED, S.SKIPPED, S.INTERRUPTED})

# Every live status may end SKIPPED (superseded by a newer revision) or INTERRUPTED (by a user).
_ENDINGS = {S.SKIPPED, S.INTERRUPTED}

ALLOWED: dict[str, frozenset[str]] = {
    S.CREATING: frozenset({S.QUEUED, S.CREATE_FAILED, *_ENDINGS}),
    S.QUEUED: frozenset({S.AWAITING_BUILD, S.CREATE_FAILED, *_ENDINGS}),
    S.AWAITING_BUILD: frozenset({S.BUILDING, S.BUILD_FAILED, *_ENDINGS}),
    S.BUILDING: frozenset({S.AWAITING_DEPLOY, S.BUILD_FAILED, *_ENDINGS}),
    S.AWAITING_DEPLOY: frozenset({S.DEPLOYING, S.DEPLOY_FAILED, *_ENDINGS}),
    S.DEPLOYING: frozenset({S.DEPLOYED, S.DEPLOY_FAILED, *_ENDINGS}),
    # UNKNOWN is part of the wire enum but never assigned here; nothing leaves it either.
    S.UNKNOWN: frozenset(),
    **{status: frozenset() for status in TERMINAL},
}


def is_terminal(status: str) -> bool:
    return status in TERMINAL


def can_transition(current: str, new: str) -> bool:
    return new in ALLOWED.get(current, frozenset())


def predecessors(new: str) -> list[str]:
    """The statuses a revision may be in for `new` to be applied."""
    return sorted(status for status, targets in ALLOWED.items() if new in targets)

"""A revision's build and deploy logs: lines appended as steps and servers write them."""

from __future__ import annotations

import logging
import uuid

from django.utils import timezone

from deployments.models import Revision, RevisionLog
from deployments.processes import LineSink

log = logging.getLogger("deployments")


def log_append(*, revision: Revision, type: str, lines: list[str], level: str = RevisionLog.Level.INFO) -> None:
    now = timezone.now()
    RevisionLog.objects.bulk_create(
        [RevisionLog(revision_id=revision.id, type=type, level=level, message=line, timestamp=now) for line in lines]
    )


def log_append_batch(*, revision_id: uuid.UUID, type: str, entries: list[tuple[str, str]]) -> None:
    """Append (level, message) pairs, e.g. a subprocess's output."""
    now = timezone.now()
    RevisionLog.objects.bulk_create(
        [RevisionLog(revision_id=revision_id, type=type, level=level, message=message, timestamp=now)
         for level, message in entries]
    )


def revision_log_sink(*, revision_id: uuid.UUID, type: str) -> LineSink:
    """A sink for a revision's build or deploy log that drops what it cannot write instead of raising.

    Steps write through it, and so does the thread copying a server's output, which must never die:
    the revision may have been deleted with its deployment meanwhile, or the database be briefly away.
    """
    def write(batch: list[tuple[str, str]]) -> None:
        try:
            log_append_batch(revision_id=revision_id, type=type, entries=batch)
        except Exception as exc:
            log.info("dropped %d %s log lines of revision %s (%s)", len(batch), type, revision_id,
                     exc.__class__.__name__)

    return LineSink(write)

"""State changes of one export run while a worker works on it.

A worker takes a run with `run_begin`, which gives it a fresh attempt token; every later write
is conditional on that token (and on the run still running), so a worker that lost the run (its
lease expired and another worker took over) changes nothing and learns so (`RunStop("lost")`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from exports.export_services import export_refresh_status, runs_dispatch
from exports.models import UNFINISHED_RUN, BulkExport, BulkExportRun, ExportStatus

log = logging.getLogger("exports.jobs")

DESTINATION_DELETED = "The destination of this export was deleted."
TIMED_OUT = "The run took longer than {seconds:g} seconds (EXPORT_RUN_MAX_SECONDS)."


class RunStop(Exception):
    """Stop working on a run: `cancelled`, `timed_out`, `deleted` (the destination) or `lost`."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def run_begin(*, run_id: uuid.UUID) -> BulkExportRun | None:
    """Take a run for this worker, or None when there is nothing to do (it ended, or is unknown).

    The first start pins the destination's current credential version and starts the timeout
    clock; a resumed run keeps both.
    """
    now = timezone.now()
    with transaction.atomic():
        run = (BulkExportRun.objects.select_for_update().select_related("bulk_export__destination")
               .filter(id=run_id, status__in=UNFINISHED_RUN).first())
        if run is None:
            return None
        export = run.bulk_export
        run.attempt_token = uuid.uuid4()
        if run.started_at is None:
            run.started_at = now
            run.credential_version_id = export.destination.current_credentials_id
        run.status = ExportStatus.RUNNING
        run.save(update_fields=["attempt_token", "started_at", "credential_version", "status", "updated_at"])
        if export.status == ExportStatus.CREATED:
            BulkExport.objects.filter(id=export.id, status=ExportStatus.CREATED).update(
                status=ExportStatus.RUNNING, updated_at=now)
    return run


def run_verdict(run: BulkExportRun) -> RunStop | None:
    """Why a run just taken must stop at once, if it must."""
    return _verdict(run, run.bulk_export.status, run.bulk_export.destination.deleted_at)


def run_check(run: BulkExportRun) -> RunStop | None:
    """The check at every batch boundary (one small query): lost, cancelled, deleted, timed out?"""
    row = (BulkExportRun.objects.filter(id=run.id)
           .values_list("attempt_token", "status", "bulk_export__status", "bulk_export__destination__deleted_at")
           .first())
    if row is None or row[0] != run.attempt_token or row[1] != ExportStatus.RUNNING:
        return RunStop("lost")
    return _verdict(run, row[2], row[3])


def _verdict(run: BulkExportRun, export_status: str, deleted_at: datetime | None) -> RunStop | None:
    if export_status == ExportStatus.CANCELLED:
        return RunStop("cancelled")
    if deleted_at is not None:
        return RunStop("deleted")
    if (timezone.now() - run.started_at).total_seconds() > settings.EXPORT_RUN_MAX_SECONDS:
        return RunStop("timed_out")
    return None


def _owned(run: BulkExportRun):
    return BulkExportRun.objects.filter(id=run.id, attempt_token=run.attempt_token, status=ExportStatus.RUNNING)


def _update(run: BulkExportRun, **values) -> None:
    if not _owned(run).update(updated_at=timezone.now(), **values):
        raise RunStop("lost")
    for name, value in values.items():
        setattr(run, name, value)


def run_upload_started(run: BulkExportRun, *, key: str, upload_id: str) -> None:
    """Record the multipart upload in flight before writing to it (so it can always be aborted)."""
    _update(run, pending_key=key, pending_upload_id=upload_id)


def run_upload_cleared(run: BulkExportRun) -> None:
    _update(run, pending_key=None, pending_upload_id=None)


def run_file_completed(run: BulkExportRun, *, path: str, rows: int, cursor: str) -> None:
    """A file's upload completed: only now do the files, the row count and the cursor move."""
    _update(run, exported_files=[*run.exported_files, path], rows_written=run.rows_written + rows,
            latest_cursor=cursor, pending_key=None, pending_upload_id=None)


def run_retry_scheduled(run: BulkExportRun, *, error: str) -> None:
    """Record a transient failure as `retry_<n>` and count the retry."""
    errors = {**(run.errors or {}), f"retry_{run.retry_number}": error}
    _update(run, errors=errors, retry_number=run.retry_number + 1, pending_key=None, pending_upload_id=None)


def run_finish(run: BulkExportRun, *, status: str, error: str | None = None) -> bool:
    """End the run; then the export ends if this was its last run, and waiting runs move up."""
    values = {"status": status, "finished_at": timezone.now(), "pending_key": None, "pending_upload_id": None}
    if error:
        values["errors"] = {**(run.errors or {}), f"retry_{run.retry_number}": error}
    try:
        _update(run, **values)
    except RunStop:
        return False
    log.info("Bulk export run %s ended %s (%s rows, %s files)", run.id, status, run.rows_written,
             len(run.exported_files))
    export_refresh_status(export_id=run.bulk_export_id)
    runs_dispatch(workspace_id=run.bulk_export.workspace_id)
    return True

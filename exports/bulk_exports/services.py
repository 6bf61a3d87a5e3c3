"""Writes for bulk exports: create, cancel, retry, hand export runs to workers, spawn schedule windows, and
the state changes of one export run while a worker works on it.

Export runs wait in the database until `export_runs_dispatch` hands them to workers (one core Job each),
which it does only while the workspace is under EXPORT_MAX_RUNNING_EXPORTS / EXPORT_MAX_RUNNING_RUNS:
export runs beyond the limits wait, they never fail. Dispatching locks the workspace row, so two
workers dispatching at once cannot both take the last slot.

A worker takes an export run with `export_run_begin`, which gives it a fresh attempt token; every later
write is conditional on that token (and on the export run still running), so a worker that lost it
(its lease expired and another worker took over) changes nothing and learns so (`ExportRunStop("lost")`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Workspace
from core.exceptions import Conflict, NotFound, RequestValidationError
from core.models import Job
from core.services import job_enqueue
from exports.bulk_exports import filters, selectors
from exports.bulk_exports.models import (
    FAILED_OR_TIMED_OUT,
    UNFINISHED_EXPORT_RUN,
    BulkExport,
    BulkExportRun,
    ExportStatus,
)
from exports.destinations.selectors import destination_get
from tracing.models import TracingProject

log = logging.getLogger("exports.jobs")

EXPORT_RUN_JOB = "exports.run"  # the kind of an export run's job (stored in queued jobs: never renamed)
DISPATCH_SCAN = 500
DESTINATION_DELETED = "The destination of this export was deleted."
# Shown on the wire (an export run's `errors`): its wording stays as clients have always seen it.
TIMED_OUT = "The run took longer than {seconds:g} seconds (EXPORT_RUN_MAX_SECONDS)."


def export_create(*, workspace: Workspace, destination_id: uuid.UUID, session_id: uuid.UUID, start_time: datetime,
                  end_time: datetime | None = None, filter: str | None = None, format_version: str = "v1",
                  compression: str | None = None, interval_hours: int | None = None,
                  export_fields: list[str] | None = None, format: str = "Parquet") -> BulkExport:
    """Create a one-off export (split into UTC-day export runs) or a schedule (which spawns one-off children)."""
    destination = destination_get(workspace=workspace, destination_id=destination_id)
    if not TracingProject.objects.filter(workspace=workspace, id=session_id).exists():
        raise NotFound("Tracing project (session) not found")
    if filter:
        try:
            filters.parse(filter)
        except filters.FilterError as exc:
            raise RequestValidationError.single(["body", "filter"], str(exc)) from None
    with transaction.atomic():
        export = BulkExport.objects.create(
            workspace=workspace, destination=destination, session_id=session_id, start_time=start_time,
            end_time=None if interval_hours else end_time, filter=filter or None, format=format,
            format_version=format_version or "v1",
            compression=compression or settings.EXPORT_DEFAULT_COMPRESSION,
            interval_hours=interval_hours, export_fields=export_fields or None,
            status=ExportStatus.INTERVAL_SCHEDULED if interval_hours else ExportStatus.CREATED,
        )
        if not interval_hours:
            _export_runs_create(export)
        transaction.on_commit(lambda: export_runs_dispatch(workspace_id=workspace.id))
    log.info("Bulk export %s created in workspace %s (%s)", export.id, workspace.id,
             "scheduled" if interval_hours else "one-off")
    return export


def day_ranges(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """[start, end) cut at UTC midnights: one range per UTC day it touches."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    ranges = []
    cursor = start
    while cursor < end:
        midnight = datetime(cursor.year, cursor.month, cursor.day, tzinfo=UTC) + timedelta(days=1)
        ranges.append((cursor, min(midnight, end)))
        cursor = midnight
    return ranges


def _export_runs_create(export: BulkExport) -> None:
    if export.end_time is None:
        raise ValueError("A one-off export needs an end_time.")  # the API refuses one without it
    BulkExportRun.objects.bulk_create([
        BulkExportRun(bulk_export=export, start_time=start, end_time=end)
        for start, end in day_ranges(export.start_time, export.end_time)])


def export_cancel(*, export: BulkExport) -> BulkExport:
    """Cancel an export. Waiting export runs end at once; running ones stop at their next batch boundary.

    Cancelling a schedule stops further windows; children it already spawned go on.
    """
    now = timezone.now()
    with transaction.atomic():
        changed = BulkExport.objects.filter(
            id=export.id, status__in=(ExportStatus.CREATED, ExportStatus.RUNNING, ExportStatus.INTERVAL_SCHEDULED)
        ).update(status=ExportStatus.CANCELLED, finished_at=now, updated_at=now)
        if not changed:
            export.refresh_from_db()
            if export.status == ExportStatus.CANCELLED:
                return export
            raise Conflict(f"This export already ended ({export.status}); only an unfinished export can be "
                           "cancelled.")
        BulkExportRun.objects.filter(bulk_export=export, status=ExportStatus.CREATED).update(
            status=ExportStatus.CANCELLED, finished_at=now, updated_at=now)
        # Export runs waiting for a retry find out now rather than after their delay.
        job_ids = [job_id for job_id in BulkExportRun.objects.filter(
            bulk_export=export, status=ExportStatus.RUNNING, job_id__isnull=False).values_list("job_id", flat=True)
            if job_id is not None]
        Job.objects.filter(id__in=job_ids, status=Job.Status.QUEUED).update(run_after=now)
    export.refresh_from_db()
    log.info("Bulk export %s cancelled", export.id)
    return export


def export_retry(*, export: BulkExport, export_run_ids: list[uuid.UUID] | None = None) -> int:
    """Run an export's failed or timed-out export runs (or those of `run_ids`) again, from their cursor.

    A retried export run starts afresh as far as limits go: a new timeout clock, EXPORT_MAX_RETRIES
    retries (its earlier errors are cleared), and the destination's current credential version,
    pinned when it starts again.
    """
    if export.status == ExportStatus.CANCELLED or export.is_scheduled:
        raise Conflict("Cancelled exports and schedules cannot be retried.")
    now = timezone.now()
    export_runs = BulkExportRun.objects.filter(bulk_export=export, status__in=FAILED_OR_TIMED_OUT)
    if export_run_ids is not None:
        export_runs = export_runs.filter(id__in=export_run_ids)
    with transaction.atomic():
        retried = export_runs.update(status=ExportStatus.CREATED, job_id=None, attempt_token=None, started_at=None,
                              finished_at=None, retry_number=0, errors=None, credential_version=None,
                              updated_at=now)
        if retried:
            BulkExport.objects.filter(id=export.id).update(status=ExportStatus.RUNNING, finished_at=None,
                                                           updated_at=now)
            transaction.on_commit(lambda: export_runs_dispatch(workspace_id=export.workspace_id))
    log.info("Bulk export %s: %s export run(s) retried", export.id, retried)
    return retried


def export_refresh_status(*, export_id: uuid.UUID) -> None:
    """Once every export run of a one-off export ended, the export ends: Failed if any failed, else
    TimedOut if any timed out, Cancelled if any was cancelled, else Completed."""
    statuses = set(BulkExportRun.objects.filter(bulk_export_id=export_id).values_list("status", flat=True))
    if statuses & set(UNFINISHED_EXPORT_RUN):
        return
    for status in (ExportStatus.FAILED, ExportStatus.TIMED_OUT, ExportStatus.CANCELLED):
        if status in statuses:
            break
    else:
        status = ExportStatus.COMPLETED
    now = timezone.now()
    BulkExport.objects.filter(id=export_id, status__in=(ExportStatus.CREATED, ExportStatus.RUNNING)).update(
        status=status, finished_at=now, updated_at=now)


# --- handing export runs to workers ----------------------------------------------------------------


def export_runs_dispatch(*, workspace_id: uuid.UUID | None = None) -> int:
    """Enqueue a job for each waiting export run that fits under its workspace's limits, oldest export first."""
    waiting = BulkExportRun.objects.filter(
        status=ExportStatus.CREATED, job_id__isnull=True,
        bulk_export__status__in=(ExportStatus.CREATED, ExportStatus.RUNNING))
    if workspace_id is not None:
        waiting = waiting.filter(bulk_export__workspace_id=workspace_id)
    workspaces = set(waiting.values_list("bulk_export__workspace_id", flat=True).distinct())
    return sum(_dispatch_workspace(ws) for ws in workspaces)


def _dispatch_workspace(workspace_id: uuid.UUID) -> int:
    dispatched = 0
    with transaction.atomic():
        # The lock that serialises dispatchers of one workspace (SQLite: the IMMEDIATE transaction).
        if not Workspace.objects.select_for_update().filter(id=workspace_id).exists():
            return 0
        active = selectors.export_run_list_active(workspace_id=workspace_id)
        running_runs = active.count()
        running_exports = set(active.values_list("bulk_export_id", flat=True).distinct())
        candidates = BulkExportRun.objects.filter(
            status=ExportStatus.CREATED, job_id__isnull=True, bulk_export__workspace_id=workspace_id,
            bulk_export__status__in=(ExportStatus.CREATED, ExportStatus.RUNNING),
        ).order_by("bulk_export__created_at", "bulk_export_id", "start_time").only("id", "bulk_export_id")
        for export_run in candidates[:DISPATCH_SCAN]:
            if running_runs >= settings.EXPORT_MAX_RUNNING_RUNS:
                break
            if export_run.bulk_export_id not in running_exports:
                if len(running_exports) >= settings.EXPORT_MAX_RUNNING_EXPORTS:
                    continue
                running_exports.add(export_run.bulk_export_id)
            job = job_enqueue(kind=EXPORT_RUN_JOB, payload={"run_id": str(export_run.id)})
            BulkExportRun.objects.filter(id=export_run.id).update(job_id=job.id, updated_at=timezone.now())
            running_runs += 1
            dispatched += 1
    return dispatched


def export_runs_sweep() -> int:
    """Give every export run that holds a slot a live job again (its job failed or vanished), then dispatch.

    Timeouts are enforced by the export run's own job (at its start and at every batch boundary), so an
    export run must always have one; a worker that died keeps its job leased only until the lease expires.
    """
    revived = 0
    live = set(Job.objects.filter(kind=EXPORT_RUN_JOB, status__in=(Job.Status.QUEUED, Job.Status.RUNNING))
               .values_list("id", flat=True))
    holding = selectors.export_run_list_active(workspace_id=None)
    for export_run_id, job_id in holding.values_list("id", "job_id"):
        if job_id in live:
            continue
        job = job_enqueue(kind=EXPORT_RUN_JOB, payload={"run_id": str(export_run_id)})
        BulkExportRun.objects.filter(id=export_run_id, job_id=job_id).update(job_id=job.id, updated_at=timezone.now())
        log.warning("Bulk export run %s had no live job; enqueued %s", export_run_id, job.id)
        revived += 1
    export_runs_dispatch()
    return revived


# --- schedules -----------------------------------------------------------------------------------


def schedules_spawn(*, now: datetime | None = None) -> int:
    """Spawn the due windows of every schedule, in order and a few at a time.

    Window i covers [start + i·h, start + (i+1)·h) and is due EXPORT_SCHEDULE_GRACE_SECONDS after it
    closed. A schedule never has more than EXPORT_SCHEDULE_MAX_PENDING_CHILDREN unfinished children,
    so one whose start lies far in the past catches up at the pace its children finish.
    """
    now = now or timezone.now()
    spawned = 0
    for schedule in BulkExport.objects.filter(status=ExportStatus.INTERVAL_SCHEDULED).select_related("destination"):
        spawned += _spawn_windows(schedule, now)
    if spawned:
        export_runs_dispatch()
    return spawned


def _spawn_windows(schedule: BulkExport, now: datetime) -> int:
    if schedule.interval_hours is None:
        return 0  # a one-off export: no windows
    grace = timedelta(seconds=settings.EXPORT_SCHEDULE_GRACE_SECONDS)
    interval = timedelta(hours=schedule.interval_hours)
    pending = schedule.children.filter(status__in=(ExportStatus.CREATED, ExportStatus.RUNNING)).count()
    spawned = 0
    while pending < settings.EXPORT_SCHEDULE_MAX_PENDING_CHILDREN:
        index = schedule.next_window
        start = schedule.start_time + index * interval
        end = start + interval
        if end + grace > now:
            break
        with transaction.atomic():
            # Conditional on the window number: a window is spawned once even if two spawners race.
            if not BulkExport.objects.filter(id=schedule.id, next_window=index,
                                             status=ExportStatus.INTERVAL_SCHEDULED).update(
                    next_window=index + 1, updated_at=timezone.now()):
                return spawned
            child = BulkExport.objects.create(
                workspace_id=schedule.workspace_id, destination_id=schedule.destination_id,
                session_id=schedule.session_id, start_time=start, end_time=end, filter=schedule.filter,
                format=schedule.format, format_version=schedule.format_version, compression=schedule.compression,
                export_fields=schedule.export_fields, source_bulk_export=schedule, status=ExportStatus.CREATED)
            _export_runs_create(child)
        schedule.next_window = index + 1
        pending += 1
        spawned += 1
        log.info("Schedule %s spawned window %s as export %s", schedule.id, index, child.id)
    return spawned


# --- one export run in a worker's hands -------------------------------------------------------


class ExportRunStop(Exception):
    """Stop working on an export run: `cancelled`, `timed_out`, `deleted` (the destination) or `lost`."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def export_run_begin(*, export_run_id: uuid.UUID) -> BulkExportRun | None:
    """Take an export run for this worker, or None when there is nothing to do (it ended, or is unknown).

    The first start pins the destination's current credential version and starts the timeout
    clock; a resumed export run keeps both.
    """
    now = timezone.now()
    with transaction.atomic():
        export_run = (BulkExportRun.objects.select_for_update().select_related("bulk_export__destination")
               .filter(id=export_run_id, status__in=UNFINISHED_EXPORT_RUN).first())
        if export_run is None:
            return None
        export = export_run.bulk_export
        export_run.attempt_token = uuid.uuid4()
        if export_run.started_at is None:
            export_run.started_at = now
            export_run.credential_version_id = export.destination.current_credentials_id
        export_run.status = ExportStatus.RUNNING
        export_run.save(update_fields=["attempt_token", "started_at", "credential_version", "status", "updated_at"])
        if export.status == ExportStatus.CREATED:
            BulkExport.objects.filter(id=export.id, status=ExportStatus.CREATED).update(
                status=ExportStatus.RUNNING, updated_at=now)
    return export_run


def export_run_verdict(export_run: BulkExportRun) -> ExportRunStop | None:
    """Why an export run just taken must stop at once, if it must."""
    return _verdict(export_run, export_run.bulk_export.status, export_run.bulk_export.destination.deleted_at)


def export_run_check(export_run: BulkExportRun) -> ExportRunStop | None:
    """The check at every batch boundary (one small query): lost, cancelled, deleted, timed out?"""
    row = (BulkExportRun.objects.filter(id=export_run.id)
           .values_list("attempt_token", "status", "bulk_export__status", "bulk_export__destination__deleted_at")
           .first())
    if row is None or row[0] != export_run.attempt_token or row[1] != ExportStatus.RUNNING:
        return ExportRunStop("lost")
    return _verdict(export_run, row[2], row[3])


def _verdict(export_run: BulkExportRun, export_status: str, deleted_at: datetime | None) -> ExportRunStop | None:
    if export_status == ExportStatus.CANCELLED:
        return ExportRunStop("cancelled")
    if deleted_at is not None:
        return ExportRunStop("deleted")
    started = export_run.started_at  # set when the export run began
    if started is not None and (timezone.now() - started).total_seconds() > settings.EXPORT_RUN_MAX_SECONDS:
        return ExportRunStop("timed_out")
    return None


def _owned(export_run: BulkExportRun) -> QuerySet[BulkExportRun]:
    return BulkExportRun.objects.filter(id=export_run.id, attempt_token=export_run.attempt_token,
                                        status=ExportStatus.RUNNING)


def _update(export_run: BulkExportRun, **values: Any) -> None:
    if not _owned(export_run).update(updated_at=timezone.now(), **values):
        raise ExportRunStop("lost")
    for name, value in values.items():
        setattr(export_run, name, value)


def export_run_upload_started(export_run: BulkExportRun, *, key: str, upload_id: str) -> None:
    """Record the multipart upload in flight before writing to it (so it can always be aborted)."""
    _update(export_run, pending_key=key, pending_upload_id=upload_id)


def export_run_upload_cleared(export_run: BulkExportRun) -> None:
    _update(export_run, pending_key=None, pending_upload_id=None)


def export_run_file_completed(export_run: BulkExportRun, *, path: str, rows: int, cursor: str) -> None:
    """A file's upload completed: only now do the files, the row count and the cursor move."""
    _update(export_run, exported_files=[*export_run.exported_files, path], rows_written=export_run.rows_written + rows,
            latest_cursor=cursor, pending_key=None, pending_upload_id=None)


def export_run_retry_scheduled(export_run: BulkExportRun, *, error: str) -> None:
    """Record a transient failure as `retry_<n>` and count the retry."""
    errors = {**(export_run.errors or {}), f"retry_{export_run.retry_number}": error}
    _update(export_run, errors=errors, retry_number=export_run.retry_number + 1, pending_key=None,
            pending_upload_id=None)


def export_run_finish(export_run: BulkExportRun, *, status: str, error: str | None = None) -> bool:
    """End the export run; then the export ends if this was its last one, and waiting export runs move up."""
    values = {"status": status, "finished_at": timezone.now(), "pending_key": None, "pending_upload_id": None}
    if error:
        values["errors"] = {**(export_run.errors or {}), f"retry_{export_run.retry_number}": error}
    try:
        _update(export_run, **values)
    except ExportRunStop:
        return False
    log.info("Bulk export run %s ended %s (%s rows, %s files)", export_run.id, status, export_run.rows_written,
             len(export_run.exported_files))
    export_refresh_status(export_id=export_run.bulk_export_id)
    export_runs_dispatch(workspace_id=export_run.bulk_export.workspace_id)
    return True

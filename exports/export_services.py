"""Writes for bulk export jobs: create, cancel, retry, hand runs to workers, spawn schedule windows.

Runs wait in the database until `runs_dispatch` hands them to workers (one core Job each), which
it does only while the workspace is under EXPORT_MAX_RUNNING_EXPORTS / EXPORT_MAX_RUNNING_RUNS:
runs beyond the limits wait, they never fail. Dispatching locks the workspace row, so two workers
dispatching at once cannot both take the last slot.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Workspace
from core.exceptions import Conflict, NotFound, RequestValidationError
from core.models import Job
from core.services import job_enqueue
from exports import export_selectors, filters
from exports.models import UNFINISHED_RUN, BulkExport, BulkExportRun, Destination, ExportStatus
from tracing.models import TracingProject

log = logging.getLogger("exports.jobs")

RUN_JOB = "exports.run"
DISPATCH_SCAN = 500


def export_create(*, workspace: Workspace, destination_id: uuid.UUID, session_id: uuid.UUID, start_time: datetime,
                  end_time: datetime | None = None, filter: str | None = None, format_version: str = "v1",
                  compression: str | None = None, interval_hours: int | None = None,
                  export_fields: list[str] | None = None, format: str = "Parquet") -> BulkExport:
    """Create a one-off export (split into UTC-day runs) or a schedule (which spawns one-off children)."""
    destination = Destination.objects.filter(workspace=workspace, id=destination_id, deleted_at__isnull=True).first()
    if destination is None:
        raise NotFound("Destination not found")
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
            _runs_create(export)
        transaction.on_commit(lambda: runs_dispatch(workspace_id=workspace.id))
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


def _runs_create(export: BulkExport) -> None:
    BulkExportRun.objects.bulk_create([
        BulkExportRun(bulk_export=export, start_time=start, end_time=end)
        for start, end in day_ranges(export.start_time, export.end_time)])


def export_cancel(*, export: BulkExport) -> BulkExport:
    """Cancel an export. Waiting runs end at once; running ones stop at their next batch boundary.

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
        # Runs waiting for a retry find out now rather than after their delay.
        job_ids = list(BulkExportRun.objects.filter(bulk_export=export, status=ExportStatus.RUNNING,
                                                    job_id__isnull=False).values_list("job_id", flat=True))
        Job.objects.filter(id__in=job_ids, status=Job.Status.QUEUED).update(run_after=now)
    export.refresh_from_db()
    log.info("Bulk export %s cancelled", export.id)
    return export


def export_retry(*, export: BulkExport, run_ids: list[uuid.UUID] | None = None) -> int:
    """Run an export's failed or timed-out runs (or those of `run_ids`) again; they resume from their cursor.

    A retried run starts afresh as far as limits go: a new timeout clock, EXPORT_MAX_RETRIES
    retries (its earlier errors are cleared), and the destination's current credential version,
    pinned when it starts again.
    """
    if export.status == ExportStatus.CANCELLED or export.is_scheduled:
        raise Conflict("Cancelled exports and schedules cannot be retried.")
    now = timezone.now()
    runs = BulkExportRun.objects.filter(bulk_export=export, status__in=(ExportStatus.FAILED, ExportStatus.TIMED_OUT))
    if run_ids is not None:
        runs = runs.filter(id__in=run_ids)
    with transaction.atomic():
        retried = runs.update(status=ExportStatus.CREATED, job_id=None, attempt_token=None, started_at=None,
                              finished_at=None, retry_number=0, errors=None, credential_version=None,
                              updated_at=now)
        if retried:
            BulkExport.objects.filter(id=export.id).update(status=ExportStatus.RUNNING, finished_at=None,
                                                           updated_at=now)
            transaction.on_commit(lambda: runs_dispatch(workspace_id=export.workspace_id))
    log.info("Bulk export %s: %s run(s) retried", export.id, retried)
    return retried


def export_refresh_status(*, export_id: uuid.UUID) -> None:
    """Once every run of a one-off export ended, the export ends: Failed if any run failed, else
    TimedOut if any timed out, Cancelled if any was cancelled, else Completed."""
    statuses = set(BulkExportRun.objects.filter(bulk_export_id=export_id).values_list("status", flat=True))
    if statuses & set(UNFINISHED_RUN):
        return
    for status in (ExportStatus.FAILED, ExportStatus.TIMED_OUT, ExportStatus.CANCELLED):
        if status in statuses:
            break
    else:
        status = ExportStatus.COMPLETED
    now = timezone.now()
    BulkExport.objects.filter(id=export_id, status__in=(ExportStatus.CREATED, ExportStatus.RUNNING)).update(
        status=status, finished_at=now, updated_at=now)


# --- handing runs to workers ---------------------------------------------------------------------


def runs_dispatch(*, workspace_id: uuid.UUID | None = None) -> int:
    """Enqueue a job for each waiting run that fits under its workspace's limits, oldest export first."""
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
        active = export_selectors.active_runs(workspace_id=workspace_id)
        running_runs = active.count()
        running_exports = set(active.values_list("bulk_export_id", flat=True).distinct())
        candidates = BulkExportRun.objects.filter(
            status=ExportStatus.CREATED, job_id__isnull=True, bulk_export__workspace_id=workspace_id,
            bulk_export__status__in=(ExportStatus.CREATED, ExportStatus.RUNNING),
        ).order_by("bulk_export__created_at", "bulk_export_id", "start_time").only("id", "bulk_export_id")
        for run in candidates[:DISPATCH_SCAN]:
            if running_runs >= settings.EXPORT_MAX_RUNNING_RUNS:
                break
            if run.bulk_export_id not in running_exports:
                if len(running_exports) >= settings.EXPORT_MAX_RUNNING_EXPORTS:
                    continue
                running_exports.add(run.bulk_export_id)
            job = job_enqueue(kind=RUN_JOB, payload={"run_id": str(run.id)})
            BulkExportRun.objects.filter(id=run.id).update(job_id=job.id, updated_at=timezone.now())
            running_runs += 1
            dispatched += 1
    return dispatched


def runs_sweep() -> int:
    """Give every run that holds a slot a live job again (its job failed or vanished), then dispatch.

    Timeouts are enforced by the run's own job (at its start and at every batch boundary), so a run
    must always have one; a worker that died keeps its job leased only until the lease expires.
    """
    revived = 0
    live = set(Job.objects.filter(kind=RUN_JOB, status__in=(Job.Status.QUEUED, Job.Status.RUNNING))
               .values_list("id", flat=True))
    holding = export_selectors.active_runs(workspace_id=None)
    for run_id, job_id in holding.values_list("id", "job_id"):
        if job_id in live:
            continue
        job = job_enqueue(kind=RUN_JOB, payload={"run_id": str(run_id)})
        BulkExportRun.objects.filter(id=run_id, job_id=job_id).update(job_id=job.id, updated_at=timezone.now())
        log.warning("Bulk export run %s had no live job; enqueued %s", run_id, job.id)
        revived += 1
    runs_dispatch()
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
        runs_dispatch()
    return spawned


def _spawn_windows(schedule: BulkExport, now: datetime) -> int:
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
            _runs_create(child)
        schedule.next_window = index + 1
        pending += 1
        spawned += 1
        log.info("Schedule %s spawned window %s as export %s", schedule.id, index, child.id)
    return spawned

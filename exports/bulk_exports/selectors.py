"""Reads for bulk exports and their export runs, always within one workspace (but for the admin's health lists)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Workspace
from core.exceptions import NotFound
from core.models import Job
from exports.bulk_exports.models import (
    FAILED_OR_TIMED_OUT,
    UNFINISHED_EXPORT,
    UNFINISHED_EXPORT_RUN,
    BulkExport,
    BulkExportRun,
    ExportStatus,
)


def export_list(*, workspace: Workspace) -> QuerySet[BulkExport]:
    """The workspace's exports, newest first (schedules and the children they spawned included)."""
    return BulkExport.objects.filter(workspace=workspace).order_by("-created_at", "id")


def export_get(*, workspace: Workspace, export_id: uuid.UUID) -> BulkExport:
    """One export of the workspace; another workspace's is the same 404 as a missing one."""
    export = export_list(workspace=workspace).filter(id=export_id).first()
    if export is None:
        raise NotFound("Bulk export not found")
    return export


def export_run_list(*, export: BulkExport) -> QuerySet[BulkExportRun]:
    return BulkExportRun.objects.filter(bulk_export=export).select_related(
        "bulk_export__destination").order_by("start_time", "id")


def export_run_get(*, export: BulkExport, export_run_id: uuid.UUID) -> BulkExportRun:
    export_run = export_run_list(export=export).filter(id=export_run_id).first()
    if export_run is None:
        raise NotFound("Bulk export run not found")
    return export_run


def export_run_list_by_source(*, workspace: Workspace, source_export_id: uuid.UUID) -> QuerySet[BulkExportRun]:
    """The export runs of every export a schedule spawned (404 when the schedule is not the workspace's)."""
    source = export_get(workspace=workspace, export_id=source_export_id)
    return BulkExportRun.objects.filter(bulk_export__source_bulk_export=source).select_related(
        "bulk_export__destination").order_by("start_time", "bulk_export__created_at", "id")


def export_run_list_active(*, workspace_id: uuid.UUID | None) -> QuerySet[BulkExportRun]:
    """Export runs that hold a slot: running, or handed to a worker and about to run (None: every workspace)."""
    export_runs = BulkExportRun.objects.filter(
        Q(status=ExportStatus.RUNNING) | Q(status=ExportStatus.CREATED, job_id__isnull=False))
    return export_runs if workspace_id is None else export_runs.filter(bulk_export__workspace_id=workspace_id)


# --- what needs an admin's attention (the admin index and the "health" filters) ----------------

# A failed export stays on the index this long: long enough to be seen after a weekend, short enough that
# old failures nobody will retry do not keep the index red for ever (a retry takes it off at once).
FAILING_EXPORT_DAYS = 7


def export_list_failing(*, now: datetime | None = None) -> QuerySet[BulkExport]:
    """Exports that failed or timed out lately, and unfinished ones with an export run that already failed."""
    since = (now or timezone.now()) - timedelta(days=FAILING_EXPORT_DAYS)
    failed_export_run = BulkExportRun.objects.filter(bulk_export=OuterRef("pk"), status__in=FAILED_OR_TIMED_OUT)
    return BulkExport.objects.filter(Q(status__in=FAILED_OR_TIMED_OUT, finished_at__gte=since)
                                     | Q(status__in=UNFINISHED_EXPORT) & Exists(failed_export_run))


def export_run_list_stuck(*, now: datetime | None = None) -> QuerySet[BulkExportRun]:
    """Unfinished export runs handed to a worker whose job is gone, ended, or past its lease (the worker died).

    The periodic sweep (`export_runs_sweep`) gives them a job again; export runs listed here for long mean
    that it is not running.
    """
    now = now or timezone.now()
    live_job = Job.objects.filter(id=OuterRef("job_id")).filter(
        Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, lease_expires_at__gte=now))
    return BulkExportRun.objects.filter(status__in=UNFINISHED_EXPORT_RUN, job_id__isnull=False).exclude(
        Exists(live_job))


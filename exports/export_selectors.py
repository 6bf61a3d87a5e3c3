"""Reads for bulk export jobs: exports and their runs, always within one workspace."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import Workspace
from core.exceptions import NotFound
from core.models import Job
from exports import usage
from exports.models import UNFINISHED_EXPORT, UNFINISHED_RUN, BulkExport, BulkExportRun, ExportStatus


def export_list(*, workspace: Workspace) -> QuerySet[BulkExport]:
    """The workspace's exports, newest first (schedules and the children they spawned included)."""
    return BulkExport.objects.filter(workspace=workspace).order_by("-created_at", "id")


def export_get(*, workspace: Workspace, export_id: uuid.UUID) -> BulkExport:
    """One export of the workspace; another workspace's is the same 404 as a missing one."""
    export = export_list(workspace=workspace).filter(id=export_id).first()
    if export is None:
        raise NotFound("Bulk export not found")
    return export


def run_list(*, export: BulkExport) -> QuerySet[BulkExportRun]:
    return BulkExportRun.objects.filter(bulk_export=export).select_related(
        "bulk_export__destination").order_by("start_time", "id")


def run_get(*, export: BulkExport, run_id: uuid.UUID) -> BulkExportRun:
    run = run_list(export=export).filter(id=run_id).first()
    if run is None:
        raise NotFound("Bulk export run not found")
    return run


def run_list_by_source(*, workspace: Workspace, source_export_id: uuid.UUID) -> QuerySet[BulkExportRun]:
    """The runs of every export a schedule spawned (404 when the schedule is not the workspace's)."""
    source = export_get(workspace=workspace, export_id=source_export_id)
    return BulkExportRun.objects.filter(bulk_export__source_bulk_export=source).select_related(
        "bulk_export__destination").order_by("start_time", "bulk_export__created_at", "id")


def active_runs(*, workspace_id: uuid.UUID | None) -> QuerySet[BulkExportRun]:
    """Runs that hold a slot: running, or handed to a worker and about to run (None: every workspace)."""
    runs = BulkExportRun.objects.filter(
        Q(status=ExportStatus.RUNNING) | Q(status=ExportStatus.CREATED, job_id__isnull=False))
    return runs if workspace_id is None else runs.filter(bulk_export__workspace_id=workspace_id)


# --- what needs an admin's attention (the admin index and the "health" filters) ----------------

# A failed export stays on the index this long: long enough to be seen after a weekend, short enough that
# old failures nobody will retry do not keep the index red for ever (a retry takes it off at once).
FAILING_EXPORT_DAYS = 7
BAD_RUN = (ExportStatus.FAILED, ExportStatus.TIMED_OUT)


def export_list_failing(*, now: datetime | None = None) -> QuerySet[BulkExport]:
    """Exports that failed or timed out lately, and unfinished ones with a run that already failed."""
    since = (now or timezone.now()) - timedelta(days=FAILING_EXPORT_DAYS)
    failed_run = BulkExportRun.objects.filter(bulk_export=OuterRef("pk"), status__in=BAD_RUN)
    return BulkExport.objects.filter(
        Q(status__in=BAD_RUN, finished_at__gte=since) | Q(status__in=UNFINISHED_EXPORT) & Exists(failed_run))


def run_list_stuck(*, now: datetime | None = None) -> QuerySet[BulkExportRun]:
    """Unfinished runs handed to a worker whose job is gone, ended, or past its lease (the worker died).

    The periodic sweep (`runs_sweep`) gives them a job again; runs listed here for long mean it is not running.
    """
    now = now or timezone.now()
    live_job = Job.objects.filter(id=OuterRef("job_id")).filter(
        Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, lease_expires_at__gte=now))
    return BulkExportRun.objects.filter(status__in=UNFINISHED_RUN, job_id__isnull=False).exclude(Exists(live_job))


# --- what destinations need to know (exports.usage) ---------------------------------------------


def destinations_in_use(ids: list[uuid.UUID]) -> set[uuid.UUID]:
    return set(BulkExport.objects.filter(destination_id__in=ids, status__in=UNFINISHED_EXPORT)
               .values_list("destination_id", flat=True))


def pinned_credential_versions(ids: list[uuid.UUID]) -> set[uuid.UUID]:
    return set(BulkExportRun.objects.filter(credential_version_id__in=ids, status__in=UNFINISHED_RUN)
               .values_list("credential_version_id", flat=True))


def register_usage() -> None:
    usage.register("bulk-exports", destinations_in_use=destinations_in_use,
                   pinned_credential_versions=pinned_credential_versions)

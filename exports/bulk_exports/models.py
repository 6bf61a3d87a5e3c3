"""Bulk exports and their export runs (one per UTC day), in the tables the `exports` app created.

The models moved here from the `exports` app (now destinations) without touching their tables:
`db_table` keeps the old names, and migration 0001 of this app only takes them over in Django's state.
"""

from __future__ import annotations

import uuid

from django.db import models

from core.models import BaseModel
from exports.destinations.models import CredentialVersion, Destination


class ExportStatus(models.TextChoices):
    """Statuses as LangSmith's wire spells them (CamelCase); `IntervalScheduled` only for schedule parents."""

    CREATED = "Created"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELLED = "Cancelled"
    TIMED_OUT = "TimedOut"
    INTERVAL_SCHEDULED = "IntervalScheduled"


UNFINISHED_EXPORT = (ExportStatus.CREATED, ExportStatus.RUNNING, ExportStatus.INTERVAL_SCHEDULED)
UNFINISHED_EXPORT_RUN = (ExportStatus.CREATED, ExportStatus.RUNNING)
FAILED_OR_TIMED_OUT = (ExportStatus.FAILED, ExportStatus.TIMED_OUT)  # what a retry starts again


class BulkExportQuerySet(models.QuerySet):
    def unfinished(self) -> BulkExportQuerySet:
        """Exports that still use their destination (destinations ask through `destination.bulk_exports`)."""
        return self.filter(status__in=UNFINISHED_EXPORT)


class BulkExportRunQuerySet(models.QuerySet):
    def unfinished(self) -> BulkExportRunQuerySet:
        """Export runs that still need the credential version they pinned (`credential_version.export_runs`)."""
        return self.filter(status__in=UNFINISHED_EXPORT_RUN)


class BulkExport(BaseModel):
    """An export of one tracing project's trace runs over [start_time, end_time) into a destination.

    A one-off export is split into one BulkExportRun (an export run) per UTC day. A scheduled export
    (with `interval_hours`) has no export runs itself: it spawns one-off child exports, one per window,
    which point back at it with `source_bulk_export`; `next_window` counts the windows spawned so far.
    """

    class Compression(models.TextChoices):
        NONE = "none"
        GZIP = "gzip"
        SNAPPY = "snappy"
        ZSTANDARD = "zstandard"

    class FormatVersion(models.TextChoices):
        V1 = "v1"
        V2_BETA = "v2_beta"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="bulk_exports")
    destination = models.ForeignKey(Destination, on_delete=models.RESTRICT, related_name="bulk_exports")
    session = models.ForeignKey("tracing.TracingProject", on_delete=models.CASCADE, related_name="bulk_exports",
                                help_text="The tracing project (a session on the wire).")
    start_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True, blank=True)
    filter = models.TextField(null=True, blank=True)
    format = models.CharField(max_length=16, default="Parquet")
    format_version = models.CharField(max_length=16, choices=FormatVersion.choices, default=FormatVersion.V1)
    compression = models.CharField(max_length=16, choices=Compression.choices, default=Compression.GZIP)
    interval_hours = models.PositiveSmallIntegerField(null=True, blank=True)
    export_fields = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=24, choices=ExportStatus.choices, default=ExportStatus.CREATED)
    source_bulk_export = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                           related_name="children")
    next_window = models.PositiveIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = BulkExportQuerySet.as_manager()

    class Meta:
        db_table = "exports_bulkexport"
        ordering = ["-created_at", "id"]
        indexes = [
            models.Index(fields=["workspace", "created_at"], name="exports_bulk_ws_idx"),
            models.Index(fields=["status"], name="exports_bulk_status_idx"),
        ]

    def __str__(self) -> str:
        return f"export {self.id} ({self.status})"

    @property
    def is_scheduled(self) -> bool:
        return self.interval_hours is not None


class BulkExportRun(BaseModel):
    """An export run: one partition (a UTC day) of an export, written as one or more Parquet files.

    Progress (`rows_written`, `exported_files`, the cursor) only moves when a file's multipart
    upload completed, in the same update; `pending_*` names the upload in flight so that a worker
    taking over (or a failure) can abort it. `attempt_token` changes whenever a worker takes the
    export run: updates by a worker that lost it match no row.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    bulk_export = models.ForeignKey(BulkExport, on_delete=models.CASCADE, related_name="export_runs")
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    status = models.CharField(max_length=24, choices=ExportStatus.choices[:6], default=ExportStatus.CREATED)
    retry_number = models.PositiveIntegerField(default=0)
    errors = models.JSONField(null=True, blank=True)
    credential_version = models.ForeignKey(CredentialVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                           related_name="export_runs")
    job_id = models.UUIDField(null=True, blank=True, help_text="The queued job that works on this export run.")
    attempt_token = models.UUIDField(null=True, blank=True, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows_written = models.BigIntegerField(default=0)
    exported_files = models.JSONField(default=list, blank=True)
    latest_cursor = models.CharField(max_length=128, null=True, blank=True)
    pending_key = models.TextField(null=True, blank=True)
    pending_upload_id = models.TextField(null=True, blank=True)

    objects = BulkExportRunQuerySet.as_manager()

    class Meta:
        db_table = "exports_bulkexportrun"
        ordering = ["start_time", "id"]
        indexes = [
            models.Index(fields=["bulk_export", "start_time"], name="exports_run_export_idx"),
            models.Index(fields=["status"], name="exports_run_status_idx"),
        ]

    def __str__(self) -> str:
        return f"export run {self.start_time:%Y-%m-%d} of export {self.bulk_export_id} ({self.status})"

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.fields import EncryptedTextField
from core.models import BaseModel


class Destination(BaseModel):
    """A named object-storage target of bulk exports (an S3 or S3-compatible bucket).

    `config` holds the validated, non-secret settings; the secrets live in immutable
    CredentialVersion rows and `current_credentials` points at the one new runs use.
    `credentials_revision` counts swaps of that pointer (optimistic concurrency for PATCH).
    """

    class Type(models.TextChoices):
        S3 = "s3"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="export_destinations")
    destination_type = models.CharField(max_length=16, choices=Type.choices, default=Type.S3)
    display_name = models.CharField(max_length=255)
    config = models.JSONField(default=dict)
    credentials_keys = models.JSONField(default=list, blank=True)
    current_credentials = models.ForeignKey(
        "exports.CredentialVersion", null=True, blank=True, on_delete=models.RESTRICT, related_name="+",
        help_text="Empty: environment-based credentials (self-hosted only).",
    )
    credentials_revision = models.PositiveIntegerField(default=0)
    last_validated_at = models.DateTimeField(null=True, blank=True)
    # Set when a re-validation (destination_validate) fails, cleared by the next success: the admin index
    # lists such destinations. The message is the service's own (classified, never the endpoint's words).
    validation_failed_at = models.DateTimeField(null=True, blank=True)
    validation_error = models.TextField(blank=True, default="")
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "deleted_at", "created_at"], name="exports_dest_ws_idx")]

    def __str__(self) -> str:
        return self.display_name

    @property
    def bucket_name(self) -> str:
        return self.config.get("bucket_name", "")


class CredentialVersion(models.Model):
    """One immutable set of destination credentials; export runs pin the version they start with.

    `secret` is encrypted JSON that also names the tenant, destination and version it belongs
    to, so a ciphertext copied into another row does not decrypt into usable credentials there.
    Purging (after retirement, once no unfinished run pins the version) empties `secret`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="credential_versions")
    number = models.PositiveIntegerField()
    credentials_keys = models.JSONField(default=list)
    secret = EncryptedTextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    retired_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["destination", "number"]
        constraints = [
            models.UniqueConstraint(fields=["destination", "number"], name="exports_credver_unique_number"),
            models.CheckConstraint(condition=Q(purged_at__isnull=True) | Q(secret__isnull=True),
                                   name="exports_credver_purged_has_no_secret"),
        ]

    def __str__(self) -> str:
        return f"credentials v{self.number} of destination {self.destination_id}"

    def save(self, *args, **kwargs):
        # Runs pin versions by id: a version's secret must never change under them.
        if not self._state.adding:
            raise ValueError("Credential versions are immutable: create a new version instead.")
        super().save(*args, **kwargs)


# --- bulk export jobs -----------------------------------------------------------------------------


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
UNFINISHED_RUN = (ExportStatus.CREATED, ExportStatus.RUNNING)


class BulkExport(BaseModel):
    """An export of one tracing project's runs over [start_time, end_time) into a destination.

    A one-off export is split into one BulkExportRun per UTC day. A scheduled export (with
    `interval_hours`) has no runs itself: it spawns one-off child exports, one per window, which
    point back at it with `source_bulk_export`; `next_window` counts the windows spawned so far.
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

    class Meta:
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
    """One partition (a UTC day) of an export, written as one or more Parquet files.

    Progress (`rows_written`, `exported_files`, the cursor) only moves when a file's multipart
    upload completed, in the same update; `pending_*` names the upload in flight so that a worker
    taking over (or a failure) can abort it. `attempt_token` changes whenever a worker takes the
    run: updates by a worker that lost it match no row.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    bulk_export = models.ForeignKey(BulkExport, on_delete=models.CASCADE, related_name="runs")
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    status = models.CharField(max_length=24, choices=ExportStatus.choices[:6], default=ExportStatus.CREATED)
    retry_number = models.PositiveIntegerField(default=0)
    errors = models.JSONField(null=True, blank=True)
    credential_version = models.ForeignKey(CredentialVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                           related_name="+")
    job_id = models.UUIDField(null=True, blank=True, help_text="The queued job that works on this run.")
    attempt_token = models.UUIDField(null=True, blank=True, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows_written = models.BigIntegerField(default=0)
    exported_files = models.JSONField(default=list, blank=True)
    latest_cursor = models.CharField(max_length=128, null=True, blank=True)
    pending_key = models.TextField(null=True, blank=True)
    pending_upload_id = models.TextField(null=True, blank=True)

    class Meta:
        ordering = ["start_time", "id"]
        indexes = [
            models.Index(fields=["bulk_export", "start_time"], name="exports_run_export_idx"),
            models.Index(fields=["status"], name="exports_run_status_idx"),
        ]

    def __str__(self) -> str:
        return f"run {self.start_time:%Y-%m-%d} of export {self.bulk_export_id} ({self.status})"

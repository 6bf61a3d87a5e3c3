"""Request and response shapes of the bulk export jobs API (LangSmith's BulkExport* schemas)."""

from __future__ import annotations

from datetime import timedelta

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from exports import filters, layout
from exports.models import BulkExport, BulkExportRun, ExportStatus
from exports.serializers import StrictSerializer
from tracing.selectors import EXPORT_FIELDS

MAX_RANGE = timedelta(days=3660)


class BulkExportCreateInputSerializer(StrictSerializer):
    bulk_export_destination_id = serializers.UUIDField()
    session_id = serializers.UUIDField()
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField(required=False, allow_null=True)
    filter = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=filters.MAX_LENGTH)
    format = serializers.ChoiceField(choices=["Parquet"], required=False, allow_null=True)
    format_version = serializers.ChoiceField(choices=BulkExport.FormatVersion.choices, required=False,
                                             allow_null=True)
    # An older Java SDK called it this; accepted as an alias.
    export_format_version = serializers.ChoiceField(choices=BulkExport.FormatVersion.choices, required=False,
                                                    allow_null=True, write_only=True)
    compression = serializers.ChoiceField(choices=BulkExport.Compression.choices, required=False, allow_null=True)
    interval_hours = serializers.IntegerField(min_value=1, max_value=168, required=False, allow_null=True)
    export_fields = serializers.ListField(child=serializers.ChoiceField(choices=EXPORT_FIELDS), required=False,
                                          allow_null=True, allow_empty=False, max_length=len(EXPORT_FIELDS))

    class Meta:
        ref_name = "BulkExportCreate"

    def validate_filter(self, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        try:
            filters.parse(value)
        except filters.FilterError as exc:
            raise serializers.ValidationError(str(exc), code="filter_invalid") from None
        return value.strip()

    def validate_export_fields(self, value: list[str] | None) -> list[str] | None:
        if value and len(set(value)) != len(value):
            raise serializers.ValidationError("A field is listed twice.", code="duplicate")
        return value

    def validate(self, attrs: dict) -> dict:
        alias = attrs.pop("export_format_version", None)
        attrs["format_version"] = attrs.get("format_version") or alias or BulkExport.FormatVersion.V1
        attrs["format"] = attrs.get("format") or "Parquet"
        if attrs.get("interval_hours"):
            if attrs.get("end_time") is not None:
                raise serializers.ValidationError(
                    {"end_time": "A scheduled export (interval_hours) has no end_time: omit it."})
        elif attrs.get("end_time") is None:
            raise serializers.ValidationError(
                {"end_time": serializers.ErrorDetail("end_time is required for a one-off export (one without "
                                                     "interval_hours).", code="missing")})
        elif attrs["end_time"] <= attrs["start_time"]:
            raise serializers.ValidationError({"end_time": "end_time must be after start_time."})
        elif attrs["end_time"] - attrs["start_time"] > MAX_RANGE:
            # One run per day: a typo in a year must not create tens of thousands of runs.
            raise serializers.ValidationError({"end_time": f"An export covers at most {MAX_RANGE.days} days."})
        return attrs


class BulkExportCancelInputSerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=[ExportStatus.CANCELLED])

    class Meta:
        ref_name = "BulkExportUpdate"


class BulkExportOutputSerializer(serializers.Serializer):
    bulk_export_destination_id = serializers.UUIDField(source="destination_id")
    session_id = serializers.UUIDField()
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField(allow_null=True)
    filter = serializers.CharField(allow_null=True)
    format = serializers.CharField()
    format_version = serializers.CharField()
    compression = serializers.CharField()
    interval_hours = serializers.IntegerField(allow_null=True)
    export_fields = serializers.ListField(child=serializers.CharField(), allow_null=True)
    id = serializers.UUIDField()
    tenant_id = serializers.UUIDField(source="workspace_id")
    status = serializers.ChoiceField(choices=ExportStatus.choices)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    source_bulk_export_id = serializers.UUIDField(allow_null=True)

    class Meta:
        ref_name = "BulkExport"


class PendingUploadSerializer(serializers.Serializer):
    target_cursor = serializers.CharField(allow_null=True)
    file_path = serializers.CharField()
    rows_count = serializers.IntegerField(allow_null=True)

    class Meta:
        ref_name = "BulkExportPendingUpload"


class RunProgressSerializer(serializers.Serializer):
    rows_written = serializers.IntegerField()
    exported_files = serializers.ListField(child=serializers.CharField())
    export_path = serializers.CharField()
    latest_cursor = serializers.CharField(allow_null=True)
    pending_upload = PendingUploadSerializer(allow_null=True)

    class Meta:
        ref_name = "BulkExportRunProgress"


class RunMetadataSerializer(serializers.Serializer):
    prefix = serializers.CharField()
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField()
    execution_backend = serializers.CharField(allow_null=True)
    result = RunProgressSerializer(allow_null=True)

    class Meta:
        ref_name = "BulkExportRunMetadata"


class BulkExportRunOutputSerializer(serializers.Serializer):
    bulk_export_id = serializers.UUIDField()
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ExportStatus.choices[:6])
    retry_number = serializers.IntegerField()
    errors = serializers.DictField(child=serializers.CharField(), allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField()
    metadata = serializers.SerializerMethodField()

    class Meta:
        ref_name = "BulkExportRun"

    @extend_schema_field(RunMetadataSerializer)
    def get_metadata(self, run: BulkExportRun) -> dict:
        paths = layout.paths(run.bulk_export)
        prefix = paths.key(*layout.partition_parts(run.bulk_export, run))
        result = None
        if run.started_at is not None:
            pending = None
            if run.pending_key:
                pending = {"target_cursor": None, "file_path": paths.display_path(run.pending_key),
                           "rows_count": None}
            result = {"rows_written": run.rows_written, "exported_files": run.exported_files,
                      "export_path": paths.display_path(prefix), "latest_cursor": run.latest_cursor,
                      "pending_upload": pending}
        data = {"prefix": prefix, "start_time": run.start_time, "end_time": run.end_time,
                "execution_backend": None, "result": result}
        return RunMetadataSerializer(data).data


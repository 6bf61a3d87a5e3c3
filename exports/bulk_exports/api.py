"""Bulk exports API: /api/v1/bulk-exports and the export runs under it (LangSmith's wire contract).

Each view validates its InputSerializer (FilterSerializer for a query), calls a service (or a
selector) and answers with its OutputSerializer. An export and an export run each have one LangSmith
schema (`BulkExport`, `BulkExportRun`), answered by several views: each is declared once, and those
views name it as their OutputSerializer.
"""

from __future__ import annotations

from datetime import timedelta

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import workspace_list_api
from core.serializers import StrictSerializer, validated, validated_query
from exports.bulk_exports import filters, layout, selectors, services
from exports.bulk_exports.models import BulkExport, BulkExportRun, ExportStatus
from tracing.selectors import EXPORT_FIELDS

MAX_RANGE = timedelta(days=3660)
_NOT_FOUND = OpenApiResponse(description="No such export (or destination, or project) in this workspace")


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


class ExportRunProgressSerializer(serializers.Serializer):
    rows_written = serializers.IntegerField()
    exported_files = serializers.ListField(child=serializers.CharField())
    export_path = serializers.CharField()
    latest_cursor = serializers.CharField(allow_null=True)
    pending_upload = PendingUploadSerializer(allow_null=True)

    class Meta:
        ref_name = "BulkExportRunProgress"


class ExportRunMetadataSerializer(serializers.Serializer):
    prefix = serializers.CharField()
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField()
    execution_backend = serializers.CharField(allow_null=True)
    result = ExportRunProgressSerializer(allow_null=True)

    class Meta:
        ref_name = "BulkExportRunMetadata"


class ExportRunOutputSerializer(serializers.Serializer):
    bulk_export_id = serializers.UUIDField()
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=ExportStatus.choices[:6])
    retry_number = serializers.IntegerField()
    # DRF's metaclass takes declared fields off the class (the stubs see a clash with Serializer.errors).
    errors = serializers.DictField(child=serializers.CharField(), allow_null=True)  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField()
    metadata = serializers.SerializerMethodField()

    class Meta:
        ref_name = "BulkExportRun"

    @extend_schema_field(ExportRunMetadataSerializer)
    def get_metadata(self, export_run: BulkExportRun) -> dict:
        paths = layout.paths(export_run.bulk_export)
        prefix = paths.key(*layout.partition_parts(export_run.bulk_export, export_run))
        result = None
        if export_run.started_at is not None:
            pending = None
            if export_run.pending_key:
                pending = {"target_cursor": None, "file_path": paths.display_path(export_run.pending_key),
                           "rows_count": None}
            result = {"rows_written": export_run.rows_written, "exported_files": export_run.exported_files,
                      "export_path": paths.display_path(prefix), "latest_cursor": export_run.latest_cursor,
                      "pending_upload": pending}
        data = {"prefix": prefix, "start_time": export_run.start_time, "end_time": export_run.end_time,
                "execution_backend": None, "result": result}
        return ExportRunMetadataSerializer(data).data


class BulkExportApi(APIView):
    # No docstring: drf-spectacular would describe every bulk-export operation with it.
    OutputSerializer: type[serializers.Serializer] = BulkExportOutputSerializer

    def export(self, request, bulk_export_id) -> BulkExport:
        """The export of the request's workspace, or a 404."""
        return selectors.export_get(workspace=request.user.workspace, export_id=bulk_export_id)


BulkExportListApi = workspace_list_api("BulkExportListApi", select=selectors.export_list,
                                       output=BulkExportOutputSerializer, permission="bulk-exports:read",
                                       operation_id="list_bulk_exports")


class BulkExportCreateApi(BulkExportApi):
    required_permission = "bulk-exports:manage"
    throttle_scope = "bulk-export-create"

    class InputSerializer(StrictSerializer):
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
                # One export run per day: a typo in a year must not create tens of thousands of them.
                raise serializers.ValidationError({"end_time": f"An export covers at most {MAX_RANGE.days} days."})
            return attrs

    @extend_schema(request=InputSerializer,
                   responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND,
                              429: OpenApiResponse(description="Too many creations (scope `bulk-export-create`)")},
                   operation_id="create_bulk_export")
    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        export = services.export_create(
            workspace=request.user.workspace, destination_id=values["bulk_export_destination_id"],
            session_id=values["session_id"], start_time=values["start_time"], end_time=values.get("end_time"),
            filter=values.get("filter"), format=values["format"], format_version=values["format_version"],
            compression=values.get("compression"), interval_hours=values.get("interval_hours"),
            export_fields=values.get("export_fields"))
        # 200, not 201: LangSmith's create answers 200.
        return Response(self.OutputSerializer(export).data)


class BulkExportDetailApi(BulkExportApi):
    required_permission = "bulk-exports:read"

    @extend_schema(responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND}, operation_id="get_bulk_export")
    def get(self, request, bulk_export_id):
        return Response(self.OutputSerializer(self.export(request, bulk_export_id)).data)


class BulkExportCancelApi(BulkExportApi):
    required_permission = "bulk-exports:manage"

    class InputSerializer(StrictSerializer):
        status = serializers.ChoiceField(choices=[ExportStatus.CANCELLED])

        class Meta:
            ref_name = "BulkExportUpdate"

    @extend_schema(request=InputSerializer,
                   responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND,
                              409: OpenApiResponse(description="The export already ended")},
                   operation_id="cancel_bulk_export")
    def patch(self, request, bulk_export_id):
        export = self.export(request, bulk_export_id)
        validated(self.InputSerializer, request.data)
        export = services.export_cancel(export=export)
        return Response(self.OutputSerializer(export).data)


class BulkExportRunListApi(BulkExportApi):
    required_permission = "bulk-exports:read"

    OutputSerializer = ExportRunOutputSerializer

    @extend_schema(responses={200: OutputSerializer(many=True), 404: _NOT_FOUND},
                   operation_id="list_bulk_export_runs")
    def get(self, request, bulk_export_id):
        export_runs = selectors.export_run_list(export=self.export(request, bulk_export_id))
        return Response(self.OutputSerializer(export_runs, many=True).data)


class BulkExportRunDetailApi(BulkExportApi):
    required_permission = "bulk-exports:read"

    OutputSerializer = ExportRunOutputSerializer

    @extend_schema(responses={200: OutputSerializer, 404: _NOT_FOUND}, operation_id="get_bulk_export_run")
    def get(self, request, bulk_export_id, run_id):
        export_run = selectors.export_run_get(export=self.export(request, bulk_export_id), export_run_id=run_id)
        return Response(self.OutputSerializer(export_run).data)


class BulkExportRunListBySourceApi(BulkExportApi):
    """The export runs of the exports a schedule spawned (`source_bulk_export_id`)."""

    required_permission = "bulk-exports:read"

    class FilterSerializer(serializers.Serializer):
        source_bulk_export_id = serializers.UUIDField()

    OutputSerializer = ExportRunOutputSerializer

    @extend_schema(parameters=[OpenApiParameter("source_bulk_export_id", OpenApiTypes.UUID, required=True,
                                                description="The scheduled export")],
                   responses={200: OutputSerializer(many=True), 404: _NOT_FOUND},
                   operation_id="list_bulk_export_runs_by_source")
    def get(self, request):
        query = validated_query(self.FilterSerializer, request.query_params)
        export_runs = selectors.export_run_list_by_source(
            workspace=request.user.workspace, source_export_id=query["source_bulk_export_id"])
        return Response(self.OutputSerializer(export_runs, many=True).data)

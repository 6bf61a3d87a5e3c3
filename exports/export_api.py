"""Bulk export jobs API: /api/v1/bulk-exports (LangSmith's wire contract)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.exception_handler import flatten_errors
from core.exceptions import RequestValidationError
from exports import export_selectors, export_services
from exports.export_serializers import (
    BulkExportCancelInputSerializer,
    BulkExportCreateInputSerializer,
    BulkExportOutputSerializer,
    BulkExportRunOutputSerializer,
)

TAGS = ["bulk-exports"]
_NOT_FOUND = OpenApiResponse(description="No such export (or destination, or project) in this workspace")


class BulkExportListApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses=BulkExportOutputSerializer(many=True), operation_id="list_bulk_exports", tags=TAGS)
    def get(self, request):
        exports = export_selectors.export_list(workspace=request.user.workspace)
        return Response(BulkExportOutputSerializer(exports, many=True).data)


class BulkExportCreateApi(APIView):
    required_permission = "bulk-exports:manage"
    throttle_scope = "bulk-export-create"

    InputSerializer = BulkExportCreateInputSerializer

    @extend_schema(request=InputSerializer,
                   responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND,
                              429: OpenApiResponse(description="Too many creations (scope `bulk-export-create`)")},
                   operation_id="create_bulk_export", tags=TAGS)
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        export = export_services.export_create(
            workspace=request.user.workspace, destination_id=values["bulk_export_destination_id"],
            session_id=values["session_id"], start_time=values["start_time"], end_time=values.get("end_time"),
            filter=values.get("filter"), format=values["format"], format_version=values["format_version"],
            compression=values.get("compression"), interval_hours=values.get("interval_hours"),
            export_fields=values.get("export_fields"))
        # 200, not 201: LangSmith's create answers 200.
        return Response(BulkExportOutputSerializer(export).data)


class BulkExportDetailApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND}, operation_id="get_bulk_export",
                   tags=TAGS)
    def get(self, request, bulk_export_id):
        export = export_selectors.export_get(workspace=request.user.workspace, export_id=bulk_export_id)
        return Response(BulkExportOutputSerializer(export).data)


class BulkExportCancelApi(APIView):
    required_permission = "bulk-exports:manage"

    InputSerializer = BulkExportCancelInputSerializer

    @extend_schema(request=InputSerializer,
                   responses={200: BulkExportOutputSerializer, 404: _NOT_FOUND,
                              409: OpenApiResponse(description="The export already ended")},
                   operation_id="cancel_bulk_export", tags=TAGS)
    def patch(self, request, bulk_export_id):
        export = export_selectors.export_get(workspace=request.user.workspace, export_id=bulk_export_id)
        self.InputSerializer(data=request.data).is_valid(raise_exception=True)
        export = export_services.export_cancel(export=export)
        return Response(BulkExportOutputSerializer(export).data)


class BulkExportRunListApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses={200: BulkExportRunOutputSerializer(many=True), 404: _NOT_FOUND},
                   operation_id="list_bulk_export_runs", tags=TAGS)
    def get(self, request, bulk_export_id):
        export = export_selectors.export_get(workspace=request.user.workspace, export_id=bulk_export_id)
        return Response(BulkExportRunOutputSerializer(export_selectors.run_list(export=export), many=True).data)


class BulkExportRunDetailApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses={200: BulkExportRunOutputSerializer, 404: _NOT_FOUND},
                   operation_id="get_bulk_export_run", tags=TAGS)
    def get(self, request, bulk_export_id, run_id):
        export = export_selectors.export_get(workspace=request.user.workspace, export_id=bulk_export_id)
        run = export_selectors.run_get(export=export, run_id=run_id)
        return Response(BulkExportRunOutputSerializer(run).data)


class BulkExportRunsBySourceApi(APIView):
    """The runs of the exports a schedule spawned (`source_bulk_export_id`)."""

    required_permission = "bulk-exports:read"

    class QuerySerializer(serializers.Serializer):
        source_bulk_export_id = serializers.UUIDField()

    @extend_schema(parameters=[OpenApiParameter("source_bulk_export_id", OpenApiTypes.UUID, required=True,
                                                description="The scheduled export")],
                   responses={200: BulkExportRunOutputSerializer(many=True), 404: _NOT_FOUND},
                   operation_id="list_bulk_export_runs_by_source", tags=TAGS)
    def get(self, request):
        query = self.QuerySerializer(data=request.query_params)
        if not query.is_valid():
            raise RequestValidationError(flatten_errors(query.errors, ["query"]))
        runs = export_selectors.run_list_by_source(workspace=request.user.workspace,
                                                   source_export_id=query.validated_data["source_bulk_export_id"])
        return Response(BulkExportRunOutputSerializer(runs, many=True).data)

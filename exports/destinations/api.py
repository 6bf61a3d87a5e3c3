"""Bulk export destinations API: /api/v1/bulk-exports/destinations (LangSmith's wire contract).

Each view validates its InputSerializer, calls a service (or a selector) and answers with its
OutputSerializer. List, create and detail answer the same LangSmith schema (`BulkExportDestination`):
it is declared once, and those views name it as their OutputSerializer.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import workspace_list_api
from core.serializers import CachedFieldsSerializer, StrictSerializer, validated
from exports.destinations import selectors, services
from exports.destinations.models import Destination
from exports.destinations.serializers import (
    S3ConfigInputSerializer,
    S3ConfigOutputSerializer,
    S3CredentialsInputSerializer,
    refuse_role_arn,
)

_ERRORS = {400: OpenApiResponse(description="The test write failed: `Failed to validate S3 destination: …`"),
           404: OpenApiResponse(description="No such destination in this workspace"),
           429: OpenApiResponse(description="Too many test writes (scope `destination-validation`); a request "
                                            "refused before its test write does not count")}


def _credentials(data: dict | None) -> dict | None:
    if not data:
        return None
    return {k: v for k, v in data.items() if v not in (None, "")}


class DestinationOutputSerializer(CachedFieldsSerializer):
    destination_type = serializers.CharField()
    display_name = serializers.CharField()
    config = S3ConfigOutputSerializer()
    id = serializers.UUIDField()
    tenant_id = serializers.UUIDField(source="workspace_id")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    credentials_keys = serializers.ListField(child=serializers.CharField())

    class Meta:
        ref_name = "BulkExportDestination"


DestinationListApi = workspace_list_api("DestinationListApi", select=selectors.destination_list,
                                        output=DestinationOutputSerializer, permission="bulk-exports:read",
                                        operation_id="list_bulk_export_destinations")


class DestinationCreateApi(APIView):
    required_permission = "bulk-exports:manage"

    class InputSerializer(CachedFieldsSerializer):
        destination_type = serializers.ChoiceField(choices=Destination.Type.choices, default=Destination.Type.S3,
                                                   allow_null=True)
        display_name = serializers.RegexField(r"^[a-zA-Z0-9\-_ ']+$", max_length=255)
        config = S3ConfigInputSerializer()
        credentials = S3CredentialsInputSerializer(required=False, allow_null=True)
        aws_role_arn = serializers.CharField(required=False, allow_null=True, allow_blank=True)

        class Meta:
            ref_name = "BulkExportDestinationCreate"

        validate_aws_role_arn = refuse_role_arn

        def validate(self, attrs):
            attrs["destination_type"] = attrs.get("destination_type") or Destination.Type.S3
            if not attrs.get("credentials") and not settings.EXPORTS_ALLOW_AMBIENT_CREDENTIALS:
                raise serializers.ValidationError({"credentials": serializers.ErrorDetail(
                    "credentials are required: environment-based credentials are not enabled on this installation.",
                    code="missing")})
            return attrs

    OutputSerializer = DestinationOutputSerializer

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: _ERRORS[400], 429: _ERRORS[429]},
                   operation_id="create_bulk_export_destination")
    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        destination = services.destination_create(
            workspace=request.user.workspace,
            display_name=values["display_name"],
            destination_type=values["destination_type"],
            config=values["config"],
            credentials=_credentials(values.get("credentials")),
        )
        # 200, not 201: LangSmith's create answers 200.
        return Response(self.OutputSerializer(destination).data)


class DestinationDetailApi(APIView):
    required_permission = "bulk-exports:read"

    OutputSerializer = DestinationOutputSerializer

    @extend_schema(responses={200: OutputSerializer, 404: _ERRORS[404]}, operation_id="get_bulk_export_destination")
    def get(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        return Response(self.OutputSerializer(destination).data)


class DestinationCredentialsUpdateApi(APIView):
    required_permission = "bulk-exports:manage"

    class InputSerializer(StrictSerializer):
        credentials = S3CredentialsInputSerializer()
        aws_role_arn = serializers.CharField(required=False, allow_null=True, allow_blank=True)

        FIXED_FIELDS = ("config", "display_name", "destination_type")

        class Meta:
            ref_name = "BulkExportDestinationUpdate"

        def to_internal_value(self, data):
            # The rest of a destination cannot change: say so instead of a bare "extra input".
            fixed = [name for name in self.FIXED_FIELDS if isinstance(data, dict) and name in data]
            if fixed:
                raise serializers.ValidationError({name: [serializers.ErrorDetail(
                    "Only credentials can be updated; create a new destination to change this.",
                    code="read_only")] for name in fixed})
            return super().to_internal_value(data)

        validate_aws_role_arn = refuse_role_arn

    class OutputSerializer(DestinationOutputSerializer):
        """What PATCH answers (as in LangSmith's docs): no config, no display name."""

        # None takes an inherited field out (DRF).
        destination_type = None  # type: ignore[assignment]
        display_name = None  # type: ignore[assignment]
        config = None  # type: ignore[assignment]

        class Meta:
            ref_name = "BulkExportDestinationUpdated"

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **_ERRORS},
                   operation_id="update_bulk_export_destination")
    def patch(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        values = validated(self.InputSerializer, request.data)
        destination = services.destination_credentials_update(
            destination=destination, credentials=_credentials(values["credentials"]))
        return Response(self.OutputSerializer(destination).data)


class DestinationDeleteApi(APIView):
    """Not in LangSmith's API (which cannot delete destinations); refused while an export uses it."""

    required_permission = "bulk-exports:manage"

    @extend_schema(request=None, responses={204: None, 404: _ERRORS[404],
                                            409: OpenApiResponse(description="An unfinished export uses it")},
                   operation_id="delete_bulk_export_destination")
    def delete(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        services.destination_delete(destination=destination)
        return Response(status=204)

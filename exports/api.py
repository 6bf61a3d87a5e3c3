"""Bulk export destinations API: /api/v1/bulk-exports/destinations (LangSmith's wire contract)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from exports import selectors, services
from exports.serializers import (
    DestinationCreateInputSerializer,
    DestinationOutputSerializer,
    DestinationUpdateInputSerializer,
    DestinationUpdateOutputSerializer,
)

TAGS = ["bulk-exports"]
_ERRORS = {400: OpenApiResponse(description="The test write failed: `Failed to validate S3 destination: …`"),
           404: OpenApiResponse(description="No such destination in this workspace"),
           429: OpenApiResponse(description="Too many validations (scope `destination-validation`)")}


def _credentials(data: dict | None) -> dict | None:
    if not data:
        return None
    return {k: v for k, v in data.items() if v not in (None, "")}


class DestinationListApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses=DestinationOutputSerializer(many=True), operation_id="list_bulk_export_destinations",
                   tags=TAGS)
    def get(self, request):
        destinations = selectors.destination_list(workspace=request.user.workspace)
        return Response(DestinationOutputSerializer(destinations, many=True).data)


class DestinationCreateApi(APIView):
    required_permission = "bulk-exports:manage"
    throttle_scope = services.VALIDATION_SCOPE

    InputSerializer = DestinationCreateInputSerializer

    @extend_schema(request=InputSerializer, responses={200: DestinationOutputSerializer, 400: _ERRORS[400],
                                                       429: _ERRORS[429]},
                   operation_id="create_bulk_export_destination", tags=TAGS)
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        destination = services.destination_create(
            workspace=request.user.workspace,
            display_name=values["display_name"],
            destination_type=values["destination_type"],
            config=values["config"],
            credentials=_credentials(values.get("credentials")),
        )
        # 200, not 201: LangSmith's create answers 200.
        return Response(DestinationOutputSerializer(destination).data)


class DestinationDetailApi(APIView):
    required_permission = "bulk-exports:read"

    @extend_schema(responses={200: DestinationOutputSerializer, 404: _ERRORS[404]},
                   operation_id="get_bulk_export_destination", tags=TAGS)
    def get(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        return Response(DestinationOutputSerializer(destination).data)


class DestinationCredentialsUpdateApi(APIView):
    required_permission = "bulk-exports:manage"
    throttle_scope = services.VALIDATION_SCOPE

    InputSerializer = DestinationUpdateInputSerializer

    @extend_schema(request=InputSerializer, responses={200: DestinationUpdateOutputSerializer, **_ERRORS},
                   operation_id="update_bulk_export_destination", tags=TAGS)
    def patch(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        destination = services.destination_credentials_update(
            destination=destination, credentials=_credentials(data.validated_data["credentials"]))
        # LangSmith answers a rotation with the identity and the credential field names only.
        return Response(DestinationUpdateOutputSerializer(destination).data)


class DestinationDeleteApi(APIView):
    """Not in LangSmith's API (which cannot delete destinations); refused while an export uses it."""

    required_permission = "bulk-exports:manage"

    @extend_schema(request=None, responses={204: None, 404: _ERRORS[404],
                                            409: OpenApiResponse(description="An unfinished export uses it")},
                   operation_id="delete_bulk_export_destination", tags=TAGS)
    def delete(self, request, destination_id):
        destination = selectors.destination_get(workspace=request.user.workspace, destination_id=destination_id)
        services.destination_delete(destination=destination)
        return Response(status=204)

"""Source uploads: a signed URL for a tarball, and the PUT to it (what `langgraph deploy` does before its PATCH)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from core.serializers import validated
from deployments import uploads
from deployments.api import MANAGE, NOT_FOUND, deployment_from_path


class UploadUrlCreateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    class InputSerializer(serializers.Serializer):
        # Accepted and ignored: an upload here takes no extra headers either way.
        supports_upload_headers = serializers.BooleanField(required=False, allow_null=True)

        class Meta:
            ref_name = "UploadUrlInput"

    class OutputSerializer(serializers.Serializer):
        upload_url = serializers.CharField()
        object_path = serializers.CharField()

        class Meta:
            ref_name = "UploadUrlOutput"

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: None, 409: None, **NOT_FOUND},
                   operation_id="create_upload_url")
    def post(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        validated(self.InputSerializer, request.data)
        return Response(self.OutputSerializer(uploads.upload_url_create(deployment=deployment)).data)


class RawBodyParser(BaseParser):
    """Accepts any body without reading it: the view streams it to disk itself."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


class UploadPutApi(APIView):
    """`PUT` a source tarball to a signed upload URL. The URL is the authorisation; no API key is sent."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [RawBodyParser]

    @extend_schema(request={"application/gzip": OpenApiTypes.BINARY}, responses={200: None, 400: None, 403: None,
                                                                                 404: None, 409: None, 413: None},
                   parameters=[OpenApiParameter("signature", str, required=True)], operation_id="upload_source",
                   auth=[])
    def put(self, request, object_path):
        # request._request is Django's request: reading it streams the spooled body, never all at once.
        uploads.upload_store(object_path=object_path, signature=request.query_params.get("signature"),
                             body=request._request)
        return Response(status=200)

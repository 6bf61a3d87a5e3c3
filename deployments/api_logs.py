"""Revision logs (the /v2 endpoint and the /v1 ones LangChain's CLI calls) and source uploads."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from deployments import selectors, uploads
from deployments import serializers as s
from deployments.api import MANAGE, NOT_FOUND, READ, deployment_from_path, revision_from_path
from deployments.models import RevisionLog


def log_entry(entry: RevisionLog) -> dict:
    return {"id": str(entry.id), "timestamp": int(entry.timestamp.timestamp() * 1000), "level": entry.level,
            "message": entry.message}


def logs_response(revisions, params: dict, log_type: str) -> Response:
    query = selectors.LogQuery(type=log_type, limit=params["limit"], order=params["order"],
                               offset=params.get("offset"), start_time=params.get("start_time"),
                               end_time=params.get("end_time"), level=params.get("level"), query=params.get("query"))
    page, next_offset = selectors.log_page(revisions=revisions, params=query)
    return Response(s.LogsOutput({"logs": [log_entry(e) for e in page], "next_offset": next_offset}).data)


class RevisionLogsApi(APIView):
    required_permission = READ

    @extend_schema(parameters=[s.LogQuery], responses={200: s.LogsOutput, **NOT_FOUND}, operation_id="revision_logs")
    def get(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        params = s.validate_query(s.LogQuery, request.query_params)
        return logs_response([revision], params, params["type"])


def _body_params(request) -> dict:
    serializer = s.LogParams(data=request.data or {})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ProjectBuildLogsApi(APIView):
    """`POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs`, as langgraph-cli calls it."""

    required_permission = READ

    @extend_schema(request=s.LogParams, responses={200: s.LogsOutput, **NOT_FOUND}, operation_id="project_build_logs")
    def post(self, request, project_id, revision_id):
        _, revision = revision_from_path(request, project_id, revision_id)
        return logs_response([revision], _body_params(request), RevisionLog.Type.BUILD)


class ProjectRevisionDeployLogsApi(APIView):
    required_permission = READ

    @extend_schema(request=s.LogParams, responses={200: s.LogsOutput, **NOT_FOUND},
                   operation_id="project_revision_deploy_logs")
    def post(self, request, project_id, revision_id):
        _, revision = revision_from_path(request, project_id, revision_id)
        return logs_response([revision], _body_params(request), RevisionLog.Type.DEPLOY)


class ProjectDeployLogsApi(APIView):
    """Deploy logs of every revision of a deployment."""

    required_permission = READ

    @extend_schema(request=s.LogParams, responses={200: s.LogsOutput, **NOT_FOUND}, operation_id="project_deploy_logs")
    def post(self, request, project_id):
        deployment = deployment_from_path(request, project_id)
        return logs_response(deployment.revisions.all(), _body_params(request), RevisionLog.Type.DEPLOY)


class UploadUrlCreateApi(APIView):
    required_permission = MANAGE
    throttle_scope = "deployment-write"

    @extend_schema(request=s.UploadUrlInput, responses={200: s.UploadUrlOutput, 400: None, 409: None, **NOT_FOUND},
                   operation_id="create_upload_url")
    def post(self, request, deployment_id):
        deployment = deployment_from_path(request, deployment_id)
        s.UploadUrlInput(data=request.data).is_valid(raise_exception=True)
        return Response(s.UploadUrlOutput(uploads.upload_url_create(deployment=deployment)).data)


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

"""Revision logs: the /v2 endpoint, and the /v1 ones LangChain's CLI calls while it follows a revision build."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.serializers import validated, validated_query
from deployments import selectors
from deployments.api import NOT_FOUND, READ, deployment_from_path, revision_from_path
from deployments.models import RevisionLog
from deployments.serializers import LogParamsSerializer, LogsOutputSerializer


def _log_page(revisions, params: dict, log_type: str, *, labelled: bool = False) -> dict:
    """One page of logs; `labelled`: the lines of several revisions, each prefixed with its revision's number
    (`[#2] `), since langgraph-cli prints only a line's time, level and message."""
    query = selectors.LogQuery(type=log_type, limit=params["limit"], order=params["order"],
                               offset=params.get("offset"), start_time=params.get("start_time"),
                               end_time=params.get("end_time"), level=params.get("level"), query=params.get("query"))
    page, next_offset = selectors.log_page(revisions=revisions, params=query)
    numbers = selectors.revision_numbers(revision_ids=[entry.revision_id for entry in page]) if labelled else {}
    logs = [{"id": entry.id, "timestamp": entry.timestamp, "level": entry.level, "revision_id": entry.revision_id,
             "message": f"[#{numbers[entry.revision_id]}] {entry.message}" if labelled else entry.message}
            for entry in page]
    return {"logs": logs, "next_offset": next_offset}


class RevisionLogsApi(APIView):
    required_permission = READ

    class FilterSerializer(LogParamsSerializer):
        type = serializers.ChoiceField(RevisionLog.Type.values)

        class Meta:
            ref_name = "LogQuery"

    OutputSerializer = LogsOutputSerializer

    @extend_schema(parameters=[FilterSerializer], responses={200: OutputSerializer, **NOT_FOUND},
                   operation_id="revision_logs")
    def get(self, request, deployment_id, revision_id):
        _, revision = revision_from_path(request, deployment_id, revision_id)
        filters = validated_query(self.FilterSerializer, request.query_params)
        return Response(self.OutputSerializer(_log_page([revision], filters, filters["type"])).data)


# The /v1 log endpoints take their parameters in a JSON body ("project" is the deployment). A comment, not a
# docstring: the subclasses' docstrings are their operations' descriptions in the schema.
class _ProjectLogsApi(APIView):
    required_permission = READ

    InputSerializer = LogParamsSerializer
    OutputSerializer = LogsOutputSerializer

    def logs_response(self, request, revisions, log_type: str, *, labelled: bool = False) -> Response:
        params = validated(self.InputSerializer, request.data or {})
        return Response(self.OutputSerializer(_log_page(revisions, params, log_type, labelled=labelled)).data)


class _ProjectRevisionLogsApi(_ProjectLogsApi):
    log_type: str  # which log of the revision the subclass answers with

    @extend_schema(request=LogParamsSerializer, responses={200: LogsOutputSerializer, **NOT_FOUND})
    def post(self, request, project_id, revision_id):
        _, revision = revision_from_path(request, project_id, revision_id)
        return self.logs_response(request, [revision], self.log_type)


@extend_schema_view(post=extend_schema(operation_id="project_build_logs"))
class ProjectBuildLogsApi(_ProjectRevisionLogsApi):
    """`POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs`, as langgraph-cli calls it."""

    log_type = RevisionLog.Type.BUILD


@extend_schema_view(post=extend_schema(operation_id="project_revision_deploy_logs"))
class ProjectRevisionDeployLogsApi(_ProjectRevisionLogsApi):
    log_type = RevisionLog.Type.DEPLOY


class ProjectDeployLogsApi(_ProjectLogsApi):
    """Deploy logs of every revision of a deployment, each line's message prefixed with its revision's number
    (`[#2] …`)."""

    @extend_schema(request=LogParamsSerializer, responses={200: LogsOutputSerializer, **NOT_FOUND},
                   operation_id="project_deploy_logs")
    def post(self, request, project_id):
        deployment = deployment_from_path(request, project_id)
        return self.logs_response(request, deployment.revisions.all(), RevisionLog.Type.DEPLOY, labelled=True)

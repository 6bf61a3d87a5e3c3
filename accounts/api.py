"""Workspaces API: the workspaces a key may use. One view per operation: validate, call a service or selector,
serialize."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from core.serializers import validated


# A workspace as every operation answers it: one serializer, so one schema component (WorkspaceOutput).
class WorkspaceOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()


class WorkspaceListApi(APIView):
    required_permission = None
    OutputSerializer = WorkspaceOutputSerializer

    @extend_schema(responses=OutputSerializer(many=True), operation_id="list_workspaces")
    def get(self, request):
        workspaces = selectors.workspace_list_for_key(api_key=request.user.api_key)
        return Response(self.OutputSerializer(workspaces, many=True).data)


class WorkspaceCreateApi(APIView):
    required_permission = "workspaces:manage"
    throttle_scope = "workspace-create"
    OutputSerializer = WorkspaceOutputSerializer

    class InputSerializer(serializers.Serializer):
        name = serializers.RegexField(r"^[a-zA-Z0-9\-_ ']+$", max_length=128)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 409: None},
                   operation_id="create_workspace")
    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        workspace = services.workspace_create(name=data["name"], api_key=request.user.api_key)
        return Response(self.OutputSerializer(workspace).data, status=201)


class WorkspaceDetailApi(APIView):
    required_permission = None
    OutputSerializer = WorkspaceOutputSerializer

    @extend_schema(responses=OutputSerializer, operation_id="get_workspace")
    def get(self, request, workspace_id):
        workspace = selectors.workspace_get_for_key(api_key=request.user.api_key, workspace_id=workspace_id)
        return Response(self.OutputSerializer(workspace).data)


class WorkspaceCurrentApi(APIView):
    """The workspace this request acts in (from X-Tenant-Id, or the key's only workspace)."""

    required_permission = None
    OutputSerializer = WorkspaceOutputSerializer

    @extend_schema(responses=OutputSerializer, operation_id="get_current_workspace")
    def get(self, request):
        return Response(self.OutputSerializer(request.user.workspace).data)

"""REST view building blocks shared by the apps' api.py modules."""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView


def workspace_list_api(name: str, *, select: Callable, output: type[serializers.Serializer], permission: str,
                       **schema) -> type[APIView]:
    """The list operation of a workspace's collection, which every such collection declares the same way: GET
    answers what `select(workspace=…)` returns for the request's workspace, each written by `output`. `schema`
    holds the rest of the operation's `extend_schema` (operation_id, tags)."""

    class ListApi(APIView):
        required_permission = permission
        OutputSerializer = output

        @extend_schema(responses=output(many=True), **schema)
        def get(self, request):
            return Response(self.OutputSerializer(select(workspace=request.user.workspace), many=True).data)

    ListApi.__name__ = ListApi.__qualname__ = name
    return ListApi

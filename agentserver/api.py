"""The Agent Server API's system and assistant operations (threads: api_threads.py), one view per operation."""

from __future__ import annotations

import os

import langgraph.version
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from agentruntime.selectors import get_served_graph
from agentserver import graphs, selectors, services
from agentserver.http import (
    AgentServerApi,
    StateRenderer,
    assistant_id_of,
    handle_exception,
    paginated,
    query_flag,
    search_fields,
    selected,
)
from core.exceptions import RequestValidationError

# The version of LangChain's Agent Server whose API this one follows (its /info answers the same).
AGENT_SERVER_API_VERSION = "0.16.7"
ASSISTANT_FIELDS = ["assistant_id", "graph_id", "config", "context", "metadata", "name", "created_at",
                    "updated_at", "version", "description"]
ASSISTANT_SORTS = ["assistant_id", "created_at", "updated_at", "name", "graph_id"]


class OkApi(APIView):
    renderer_classes = [StateRenderer]
    # Not in the service's REST schema (/api/schema/): the Agent Server's own shapes (core.openapi_generation).
    documented_separately = True
    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []

    def get_exception_handler(self):
        return handle_exception

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="health_check_ok_get")
    def get(self, request):
        return Response({"ok": True})


class InfoApi(AgentServerApi):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="server_info_info_get")
    def get(self, request):
        return Response({
            "version": AGENT_SERVER_API_VERSION,
            "langgraph_py_version": langgraph.version.__version__,
            "flags": {"assistants": True, "crons": False, "langsmith": False},
            "host": {"kind": "self-hosted", "project_id": None, "host_revision_id": None,
                     "revision_id": os.environ.get("SERVE_GRAPHS_REVISION_ID"), "tenant_id": None},
        })


class AssistantOutputSerializer(serializers.Serializer):
    assistant_id = serializers.CharField()
    graph_id = serializers.CharField()
    config = serializers.DictField()
    context = serializers.DictField()  # type: ignore[assignment]  # a field, not Serializer.context
    metadata = serializers.DictField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    version = serializers.IntegerField()
    description = serializers.CharField(allow_null=True)


class AssistantBaseApi(AgentServerApi):
    # No docstring: drf-spectacular would describe every assistant operation with it.
    OutputSerializer = AssistantOutputSerializer
    InputSerializer: type[serializers.Serializer]  # of the views that change an assistant

    def assistant(self, raw_id: str):
        services.assistants_ensure_system(caller=self.caller)
        return selectors.assistant_get(caller=self.caller, assistant_id=assistant_id_of(raw_id))

    def changed(self, raw_id: str, change) -> Response:
        """Apply `change` (a service: the assistant, and the validated InputSerializer) and answer the assistant."""
        assistant = self.assistant(raw_id)
        data = self.parse(self.InputSerializer)
        return Response(self.OutputSerializer(change(assistant=assistant, **data)).data)


class AssistantCreateApi(AssistantBaseApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AssistantCreateInput"

        graph_id = serializers.CharField()
        assistant_id = serializers.UUIDField(required=False)
        config = serializers.DictField(required=False)
        context = serializers.DictField(required=False)  # type: ignore[assignment]  # a field, not Serializer.context
        metadata = serializers.DictField(required=False)
        name = serializers.CharField(required=False, allow_blank=True)
        description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        if_exists = serializers.ChoiceField(["raise", "do_nothing"], default="raise")

    @extend_schema(request=InputSerializer, responses=AssistantOutputSerializer,
                   operation_id="create_assistant_assistants_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        services.assistants_ensure_system(caller=self.caller)
        return Response(self.OutputSerializer(services.assistant_create(caller=self.caller, **data)).data)


class _SearchSerializer(serializers.Serializer):
    graph_id = serializers.CharField(required=False)
    metadata = serializers.DictField(required=False)
    name = serializers.CharField(required=False)


class AssistantSearchApi(AssistantBaseApi):
    writes = False

    class InputSerializer(_SearchSerializer):
        class Meta:
            ref_name = "AssistantSearchInput"

        limit, offset, sort_by, sort_order, select = search_fields(sorts=ASSISTANT_SORTS, default_sort="created_at",
                                                                   fields=ASSISTANT_FIELDS)

    @extend_schema(request=InputSerializer, responses=AssistantOutputSerializer(many=True),
                   operation_id="search_assistants_assistants_search_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        services.assistants_ensure_system(caller=self.caller)
        found = selectors.assistant_search(caller=self.caller, graph_id=data.get("graph_id"),
                                           metadata=data.get("metadata"), name=data.get("name"),
                                           sort_by=data["sort_by"], sort_order=data["sort_order"])
        page = found[data["offset"]:data["offset"] + data["limit"]]
        items = [selected(item, data.get("select")) for item in self.OutputSerializer(page, many=True).data]
        return paginated(items, limit=data["limit"], offset=data["offset"], total=len(found))


class AssistantCountApi(AssistantBaseApi):
    writes = False

    class InputSerializer(_SearchSerializer):
        class Meta:
            ref_name = "AssistantCountInput"

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.INT,
                   operation_id="count_assistants_assistants_count_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        services.assistants_ensure_system(caller=self.caller)
        return Response(len(selectors.assistant_search(caller=self.caller, **data)))


class AssistantGetApi(AssistantBaseApi):
    @extend_schema(responses=AssistantOutputSerializer, operation_id="get_assistant_assistants__assistant_id__get")
    def get(self, request, assistant_id: str):
        return Response(self.OutputSerializer(self.assistant(assistant_id)).data)


class AssistantUpdateApi(AssistantBaseApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AssistantUpdateInput"

        graph_id = serializers.CharField(required=False)
        config = serializers.DictField(required=False)
        context = serializers.DictField(required=False)  # type: ignore[assignment]  # a field, not Serializer.context
        metadata = serializers.DictField(required=False)
        name = serializers.CharField(required=False)
        description = serializers.CharField(required=False, allow_blank=True)

    @extend_schema(request=InputSerializer, responses=AssistantOutputSerializer,
                   operation_id="patch_assistant_assistants__assistant_id__patch")
    def patch(self, request, assistant_id: str):
        return self.changed(assistant_id, services.assistant_update)


class AssistantDeleteApi(AssistantBaseApi):
    @extend_schema(responses={204: None}, operation_id="delete_assistant_assistants__assistant_id__delete")
    def delete(self, request, assistant_id: str):
        assistant = self.assistant(assistant_id)
        services.assistant_delete(caller=self.caller, assistant=assistant,
                                  delete_threads=query_flag(request, "delete_threads"))
        return Response(status=204)


class AssistantVersionsApi(AssistantBaseApi):
    writes = False

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AssistantVersionsInput"

        metadata = serializers.DictField(required=False)
        limit = serializers.IntegerField(min_value=1, max_value=1000, default=10)
        offset = serializers.IntegerField(min_value=0, default=0)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AssistantVersionsOutput"

        assistant_id = serializers.CharField(source="assistant.assistant_id")
        version = serializers.IntegerField()
        graph_id = serializers.CharField()
        config = serializers.DictField()
        context = serializers.DictField()  # type: ignore[assignment]  # a field, not Serializer.context
        metadata = serializers.DictField()
        created_at = serializers.DateTimeField()
        name = serializers.CharField()
        description = serializers.CharField(allow_null=True)

    @extend_schema(request=InputSerializer, responses=OutputSerializer(many=True),
                   operation_id="get_assistant_versions_assistants__assistant_id__versions_get")
    def post(self, request, assistant_id: str):
        assistant = self.assistant(assistant_id)
        data = self.parse(self.InputSerializer)
        versions = selectors.assistant_versions(assistant=assistant, metadata=data.get("metadata"))
        page = versions[data["offset"]:data["offset"] + data["limit"]]
        return Response(self.OutputSerializer(page, many=True).data)


class AssistantSetLatestApi(AssistantBaseApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AssistantSetLatestInput"

        version = serializers.IntegerField(min_value=1)

    @extend_schema(request=InputSerializer, responses=AssistantOutputSerializer,
                   operation_id="set_latest_assistant_version_assistants__assistant_id__versions_post")
    def post(self, request, assistant_id: str):
        return self.changed(assistant_id, services.assistant_set_latest)


def _xray(request) -> bool | int:
    raw = request.query_params.get("xray", "false").lower()
    if raw in ("true", "false"):
        return raw == "true"
    if raw.isdigit():
        return int(raw)
    raise RequestValidationError.single(["query", "xray"], "Invalid xray value")


class AssistantGraphApi(AssistantBaseApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   operation_id="get_assistant_graph_assistants__assistant_id__graph_get")
    def get(self, request, assistant_id: str):
        assistant = self.assistant(assistant_id)
        return Response(graphs.drawable(get_served_graph(assistant.graph_id).graph, xray=_xray(request)))


class AssistantSchemasApi(AssistantBaseApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   operation_id="get_assistant_schemas_assistants__assistant_id__schemas_get")
    def get(self, request, assistant_id: str):
        assistant = self.assistant(assistant_id)
        schemas = graphs.schemas(get_served_graph(assistant.graph_id).graph)
        return Response({"graph_id": assistant.graph_id, **schemas})


class AssistantSubgraphsApi(AssistantBaseApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   operation_id="get_assistant_subgraphs_assistants__assistant_id__subgraphs_get")
    def get(self, request, assistant_id: str, namespace: str | None = None):
        assistant = self.assistant(assistant_id)
        graph = get_served_graph(assistant.graph_id).graph
        return Response(graphs.subgraph_schemas(graph, namespace=namespace,
                                                recurse=query_flag(request, "recurse")))


@extend_schema_view(get=extend_schema(
    operation_id="get_assistant_subgraphs_assistants__assistant_id__subgraphs__namespace__get"))
class AssistantSubgraphApi(AssistantSubgraphsApi):
    """GET /assistants/{id}/subgraphs/{namespace}: only that namespace's subgraph."""

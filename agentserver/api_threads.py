"""The Agent Server API's thread operations, one view per operation, on the chat protocol's own threads."""

from __future__ import annotations

from types import UnionType

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response

from agentruntime import services as chat_services
from agentserver import selectors, services
from agentserver.http import AgentServerApi, paginated, query_flag, search_fields, selected
from agentserver.state import state_get, state_history

THREAD_FIELDS = ["thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "config", "status",
                 "values", "interrupts", "error"]
THREAD_SORTS = ["thread_id", "status", "created_at", "updated_at", "state_updated_at"]


class TtlSerializer(serializers.Serializer):
    strategy = serializers.ChoiceField(["delete", "keep_latest"], default="delete")
    ttl = serializers.FloatField(min_value=0)


class CheckpointSerializer(serializers.Serializer):
    checkpoint_id = serializers.CharField(required=False, allow_null=True)
    checkpoint_ns = serializers.CharField(required=False, allow_blank=True)
    checkpoint_map = serializers.DictField(required=False, allow_null=True)
    thread_id = serializers.CharField(required=False)


class ThreadOutputSerializer(serializers.Serializer):
    thread_id = serializers.CharField(source="id")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    # State changes touch updated_at (agentruntime.services.thread_touch); metadata edits do too.
    state_updated_at = serializers.DateTimeField(source="updated_at")
    metadata = serializers.DictField()


def thread_out(thread, view: dict | None = None) -> dict:
    """The Agent Server's Thread: `error` and `interrupts` only once the thread has state, as `langgraph dev`."""
    view = view or selectors.thread_view(thread)
    # A run gives its thread the config `{"configurable": {}}` (the Agent Server merges the assistant's into it).
    config: dict = {"configurable": {}} if thread.graph_name else {}
    out = {**ThreadOutputSerializer(thread).data, "status": view["status"], "config": config,
           "values": view["values"]}
    if view["has_state"]:
        out.update(error=view["error"], interrupts=view["interrupts"])
    return out


class ThreadCreateApi(AgentServerApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ThreadCreateInput"

        thread_id = serializers.UUIDField(required=False, error_messages={
            "invalid": "Invalid thread ID: must be a UUID"})
        metadata = serializers.DictField(required=False)
        if_exists = serializers.ChoiceField(["raise", "do_nothing"], default="raise")
        ttl = TtlSerializer(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT, operation_id="create_thread_threads_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        thread_id = str(data.pop("thread_id")) if data.get("thread_id") else None
        thread = services.thread_create(caller=self.caller, thread_id=thread_id, **data)
        return Response(thread_out(thread))


class _ThreadFilterSerializer(serializers.Serializer):
    metadata = serializers.DictField(required=False)
    values = serializers.DictField(required=False)
    status = serializers.ChoiceField(list(selectors.THREAD_STATUSES), required=False)


class ThreadSearchApi(AgentServerApi):
    writes = False

    class InputSerializer(_ThreadFilterSerializer):
        class Meta:
            ref_name = "ThreadSearchInput"

        ids = serializers.ListField(child=serializers.CharField(), required=False)
        limit, offset, sort_by, sort_order, select = search_fields(sorts=THREAD_SORTS, default_sort="updated_at",
                                                                   fields=THREAD_FIELDS)

    @extend_schema(request=InputSerializer, responses={200: {"type": "array", "items": {"type": "object"}}},
                   operation_id="search_threads_threads_search_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        select = data.pop("select", None)
        found, total = selectors.thread_search(caller=self.caller, **data)
        page = [selected(thread_out(thread, view), select) for thread, view in found]
        return paginated(page, limit=data["limit"], offset=data["offset"], total=total)


class ThreadCountApi(AgentServerApi):
    writes = False

    class InputSerializer(_ThreadFilterSerializer):
        class Meta:
            ref_name = "ThreadCountInput"

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.INT, operation_id="count_threads_threads_count_post")
    def post(self, request):
        return Response(selectors.thread_search(caller=self.caller, limit=0, **self.parse(self.InputSerializer))[1])


class ThreadGetApi(AgentServerApi):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="get_thread_threads__thread_id__get")
    def get(self, request, thread_id: str):
        return Response(thread_out(selectors.thread_get(caller=self.caller, thread_id=thread_id)))


class ThreadUpdateApi(AgentServerApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ThreadUpdateInput"

        metadata = serializers.DictField(required=False, allow_null=True)
        ttl = TtlSerializer(required=False, allow_null=True)
        # Ours, not the Agent Server's: the chat page renames a thread (agentruntime.services.thread_rename checks it).
        title = serializers.JSONField(required=False)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="patch_thread_threads__thread_id__patch")
    def patch(self, request, thread_id: str):
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        thread = services.thread_update(thread=thread, **self.parse(self.InputSerializer))
        if request.headers.get("Prefer") == "return=minimal":
            return Response(status=204)
        return Response(thread_out(thread))


class ThreadDeleteApi(AgentServerApi):
    @extend_schema(responses={204: None}, operation_id="delete_thread_threads__thread_id__delete")
    def delete(self, request, thread_id: str):
        services.thread_delete(thread=selectors.thread_get(caller=self.caller, thread_id=thread_id))
        return Response(status=204)


class ThreadCopyApi(AgentServerApi):
    @extend_schema(request=None, responses=OpenApiTypes.OBJECT,
                   operation_id="copy_thread_post_threads__thread_id__copy_post")
    def post(self, request, thread_id: str):
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        return Response(thread_out(chat_services.thread_copy(thread=thread)))


class ThreadStateGetApi(AgentServerApi):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="get_latest_thread_state_threads__thread_id__state_get")
    def get(self, request, thread_id: str, checkpoint_id: str | None = None):
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        checkpoint = {"checkpoint_id": checkpoint_id} if checkpoint_id else None
        return Response(state_get(selectors.thread_graph(thread), thread.id, checkpoint=checkpoint,
                                  subgraphs=query_flag(request, "subgraphs")))


@extend_schema_view(get=extend_schema(
    operation_id="get_thread_state_at_checkpoint_threads__thread_id__state__checkpoint_id__get"))
class ThreadStateAtCheckpointIdApi(ThreadStateGetApi):
    """GET /threads/{id}/state/{checkpoint_id}."""


class ThreadStateAtCheckpointApi(AgentServerApi):
    writes = False

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ThreadStateAtCheckpointInput"

        checkpoint = CheckpointSerializer()
        subgraphs = serializers.BooleanField(default=False)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="post_thread_state_at_checkpoint_threads__thread_id__state__checkpoint_id__get")
    def post(self, request, thread_id: str):
        data = self.parse(self.InputSerializer)
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        return Response(state_get(selectors.thread_graph(thread), thread.id, checkpoint=data["checkpoint"],
                                  subgraphs=data["subgraphs"]))


class JSONOfTypesField(serializers.JSONField):
    """Any JSON in the schema (as the Agent Server documents it), but only null or a value of `types` is taken."""

    def __init__(self, types: type | UnionType, message: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.types, self.message = types, message

    def to_internal_value(self, data):
        if data is not None and not isinstance(data, self.types):
            raise serializers.ValidationError(self.message)
        return data


class ThreadStateUpdateApi(AgentServerApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ThreadStateUpdateInput"

        values = JSONOfTypesField(dict | list, "values must be a JSON object or a list of updates", required=False,
                                  allow_null=True)
        as_node = serializers.CharField(required=False, allow_null=True)
        checkpoint = CheckpointSerializer(required=False, allow_null=True)
        checkpoint_id = serializers.CharField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="update_thread_state_threads__thread_id__state_post")
    def post(self, request, thread_id: str):
        data = self.parse(self.InputSerializer)
        return Response(services.thread_state_update(caller=self.caller, thread_id=thread_id, **data))


class _ThreadHistoryApi(AgentServerApi):
    # Past states of a thread, newest first, asked in a POST's body or a GET's query.
    writes = False

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ThreadHistoryInput"

        limit = serializers.IntegerField(min_value=1, max_value=1000, default=10)
        before = JSONOfTypesField(str | dict, "before must be a checkpoint id or a checkpoint object",
                                  required=False, allow_null=True)
        metadata = serializers.DictField(required=False, allow_null=True)
        checkpoint = CheckpointSerializer(required=False, allow_null=True)

    def history(self, thread_id: str, data: dict) -> Response:
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        return Response(state_history(selectors.thread_graph(thread), thread.id, limit=data["limit"],
                                      before=data.get("before"), metadata=data.get("metadata"),
                                      checkpoint=data.get("checkpoint")))


class ThreadHistoryGetApi(_ThreadHistoryApi):
    """GET /threads/{id}/history (query `limit`, `before`)."""

    @extend_schema(responses={200: {"type": "array", "items": {"type": "object"}}},
                   operation_id="get_thread_history_threads__thread_id__history_get")
    def get(self, request, thread_id: str):
        return self.history(thread_id, self.parse(self.InputSerializer, request.query_params.dict()))


class ThreadHistoryPostApi(_ThreadHistoryApi):
    """POST /threads/{id}/history (body `limit`, `before`, `metadata`, `checkpoint`)."""

    @extend_schema(request=_ThreadHistoryApi.InputSerializer,
                   responses={200: {"type": "array", "items": {"type": "object"}}},
                   operation_id="get_thread_history_post_threads__thread_id__history_post")
    def post(self, request, thread_id: str):
        return self.history(thread_id, self.parse(self.InputSerializer))

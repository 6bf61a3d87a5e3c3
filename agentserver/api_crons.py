"""The Agent Server API's cron operations, one view per operation (agentserver/crons.py does the work)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agentserver import crons, services
from agentserver.http import AgentServerApi, paginated, search_fields, selected
from agentserver.serializers import NodesField, RunCreateSerializer, StreamModeField
from core.exceptions import RequestValidationError


class CronCreateSerializer(RunCreateSerializer):
    class Meta:
        ref_name = "CronCreateInput"

    schedule = serializers.CharField()
    timezone = serializers.CharField(required=False, allow_null=True)
    end_time = serializers.DateTimeField(required=False, allow_null=True)
    on_run_completed = serializers.ChoiceField(["delete", "keep"], required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False, default=True)


class CronPatchSerializer(serializers.Serializer):
    class Meta:
        ref_name = "CronPatchInput"

    schedule = serializers.CharField(required=False)
    timezone = serializers.CharField(required=False, allow_null=True)
    end_time = serializers.DateTimeField(required=False, allow_null=True)
    input = serializers.JSONField(required=False, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)
    config = serializers.DictField(required=False, allow_null=True)
    context = serializers.DictField(required=False, allow_null=True)  # type: ignore[assignment]  # a field, not Serializer.context
    webhook = serializers.CharField(required=False, allow_null=True, max_length=2048)
    interrupt_before = NodesField(required=False, allow_null=True)
    interrupt_after = NodesField(required=False, allow_null=True)
    on_run_completed = serializers.ChoiceField(["delete", "keep"], required=False, allow_null=True)
    enabled = serializers.BooleanField(required=False, allow_null=True)
    stream_mode = StreamModeField(required=False, allow_null=True)
    stream_subgraphs = serializers.BooleanField(required=False, allow_null=True)
    stream_resumable = serializers.BooleanField(required=False, allow_null=True)
    durability = serializers.ChoiceField(["sync", "async", "exit"], required=False, allow_null=True)


class CronOutputSerializer(serializers.Serializer):
    """The Agent Server's Cron. Times stay datetimes (ReadOnlyField), written as every other time of these answers."""

    cron_id = serializers.UUIDField(source="id")
    assistant_id = serializers.UUIDField()
    thread_id = serializers.CharField(allow_null=True)
    user_id = serializers.SerializerMethodField()
    end_time = serializers.ReadOnlyField()
    schedule = serializers.CharField()
    timezone = serializers.CharField(allow_null=True)
    payload = serializers.DictField()
    next_run_date = serializers.ReadOnlyField()
    metadata = serializers.DictField()
    on_run_completed = serializers.CharField(allow_null=True)
    enabled = serializers.BooleanField()
    created_at = serializers.ReadOnlyField()
    updated_at = serializers.ReadOnlyField()

    def get_user_id(self, cron) -> str:
        """The user a cron runs as; "" without one, as `langgraph dev` without authentication answers."""
        return str(cron.user_id) if cron.user_id else ""


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise RequestValidationError.single(["body"], "The body must be a JSON object")
    return dict(request.data)


class CronCreateApi(AgentServerApi):
    InputSerializer = CronCreateSerializer
    OutputSerializer = CronOutputSerializer

    @extend_schema(request=CronCreateSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="create_cron_runs_crons_post")
    def post(self, request, thread_id: str | None = None):
        body = _body(request)
        data = self.parse(self.InputSerializer, body)
        services.check_run_body(data)
        cron = crons.cron_create(caller=self.caller, thread_id=thread_id, body=body, data=data)
        return Response(self.OutputSerializer(cron).data)


class ThreadCronCreateApi(CronCreateApi):
    @extend_schema(request=CronCreateSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="create_thread_cron_threads__thread_id__runs_crons_post")
    def post(self, request, thread_id: str | None = None):
        return super().post(request, thread_id)


class _CronFilterSerializer(serializers.Serializer):
    assistant_id = serializers.CharField(required=False, allow_null=True)
    thread_id = serializers.CharField(required=False, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)


class CronSearchApi(AgentServerApi):
    writes = False
    OutputSerializer = CronOutputSerializer

    class InputSerializer(_CronFilterSerializer):
        class Meta:
            ref_name = "CronSearchInput"

        enabled = serializers.BooleanField(required=False, allow_null=True, default=None)
        limit, offset, sort_by, sort_order, select = search_fields(sorts=crons.SORT_FIELDS, default_sort="created_at",
                                                                   fields=crons.CRON_FIELDS)

    @extend_schema(request=InputSerializer, responses={200: {"type": "array", "items": {"type": "object"}}},
                   operation_id="search_crons_runs_crons_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        select = data.pop("select", None)
        found, total = crons.cron_search(caller=self.caller, **data)
        page = [selected(item, select) for item in self.OutputSerializer(found, many=True).data]
        return paginated(page, limit=data["limit"], offset=data["offset"], total=total)


class CronCountApi(AgentServerApi):
    writes = False

    class InputSerializer(_CronFilterSerializer):
        class Meta:
            ref_name = "CronCountInput"

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.INT,
                   operation_id="count_crons_runs_crons_count_post")
    def post(self, request):
        return Response(crons.cron_count(caller=self.caller, **self.parse(self.InputSerializer)))


class CronGetApi(AgentServerApi):
    OutputSerializer = CronOutputSerializer

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="get_cron_runs_crons__cron_id__get")
    def get(self, request, cron_id: str):
        return Response(self.OutputSerializer(crons.cron_get(caller=self.caller, cron_id=cron_id)).data)


class CronUpdateApi(AgentServerApi):
    InputSerializer = CronPatchSerializer
    OutputSerializer = CronOutputSerializer

    @extend_schema(request=CronPatchSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="patch_cron_runs_crons__cron_id__patch")
    def patch(self, request, cron_id: str):
        body = _body(request)
        data = self.parse(self.InputSerializer, body)
        services.check_run_body({k: v for k, v in data.items() if k in ("stream_mode", "webhook")})
        cron = crons.cron_get(caller=self.caller, cron_id=cron_id)
        return Response(self.OutputSerializer(crons.cron_update(cron=cron, body=body, data=data)).data)


class CronDeleteApi(AgentServerApi):
    @extend_schema(responses={204: None}, operation_id="delete_cron_runs_crons__cron_id__delete")
    def delete(self, request, cron_id: str):
        crons.cron_delete(cron=crons.cron_get(caller=self.caller, cron_id=cron_id))
        return Response(status=204)

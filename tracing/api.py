"""The LangSmith-compatible ingestion API and the read API of the trace store."""

from __future__ import annotations

from django.conf import settings
from django.db import OperationalError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.exception_handler import database_unavailable
from core.exceptions import RequestValidationError
from core.pagination import limit_field, offset_field
from core.serializers import validated_query
from tracing import ingest_bodies, selectors, services
from tracing.timing import Stopwatch
from tracing.validation import run_op_from_wire


class InfoApi(APIView):
    """What the SDK asks before it sends traces: multipart ingestion, zstd, and the batch size limit."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    class OutputSerializer(serializers.Serializer):
        version = serializers.CharField()
        license_expiration_time = serializers.DateTimeField(allow_null=True)
        batch_ingest_config = serializers.DictField()
        instance_flags = serializers.DictField()

        class Meta:
            ref_name = "TracingInfo"

    @extend_schema(responses=OutputSerializer)
    def get(self, request):
        return Response({
            "version": settings.SPECTACULAR_SETTINGS["VERSION"],
            "license_expiration_time": None,
            # The SDK reads every key of this object (it does not fill in defaults when it is present).
            "batch_ingest_config": {
                "use_multipart_endpoint": True,
                "size_limit_bytes": settings.TRACE_BODY_MAX_BYTES,
                "size_limit": 100,
                "scale_up_qsize_trigger": 1000,
                "scale_up_nthreads_limit": 16,
                "scale_down_nempty_trigger": 4,
            },
            "instance_flags": {"zstd_compression_enabled": True},
        })


class IngestOutputSerializer(serializers.Serializer):
    post = serializers.IntegerField(help_text="Posts received (new runs, or data for runs already stored).")
    patch = serializers.IntegerField(help_text="Patches received.")
    ignored_parts = serializers.IntegerField(help_text="Multipart parts not stored (attachments, feedback).")
    not_stored = serializers.ListField(child=serializers.UUIDField(), help_text=(
        "Runs not stored (nor counted above): their ids belong to another workspace."))

    class Meta:
        ref_name = "TracingIngestResult"


_DOTTED_SEGMENT = "[0-9]{8}T[0-9]{12}Z[0-9a-fA-F-]{36}"


def _optional(field_class: type[serializers.Field], **kwargs) -> serializers.Field:
    """A field of a run body that the SDK may leave out or send as null (which counts as absent)."""
    return field_class(required=False, allow_null=True, **kwargs)


class RunInputSerializer(serializers.Serializer):
    """Documents a run body; validation itself is tracing.validation (unknown fields are ignored, and a
    null optional field counts as absent, as the SDK sends them)."""

    id = serializers.UUIDField()
    name = serializers.CharField()
    run_type = serializers.ChoiceField(choices=["tool", "chain", "llm", "retriever", "embedding", "prompt", "parser"])
    start_time = _optional(serializers.DateTimeField)
    end_time = _optional(serializers.DateTimeField)
    trace_id = _optional(serializers.UUIDField)
    dotted_order = _optional(serializers.RegexField, regex=rf"^{_DOTTED_SEGMENT}(\.{_DOTTED_SEGMENT})*$")
    parent_run_id = _optional(serializers.UUIDField)
    session_name = _optional(serializers.CharField)
    session_id = _optional(serializers.UUIDField)
    inputs = _optional(serializers.DictField)
    outputs = _optional(serializers.DictField)
    error = _optional(serializers.CharField)
    extra = _optional(serializers.DictField)
    events = _optional(serializers.ListField, child=serializers.DictField())
    tags = _optional(serializers.ListField, child=serializers.CharField())
    reference_example_id = _optional(serializers.UUIDField)

    class Meta:
        ref_name = "TracingRunInput"


class _IngestApi(APIView):
    required_permission = "tracing:write"
    throttle_scope = "tracing-ingest"
    body_required = True  # read raw: an empty body is no JSON (core.openapi_generation)

    def ingest(self, request, decode, *, kind: str | None = None, run_id=None) -> Response:
        stopwatch = Stopwatch()
        workspace = request.user.workspace  # an ambiguous key is a 403 before the body is read
        with stopwatch.phase("read"):
            body = request.body
        with stopwatch.phase("decompress"):
            data = ingest_bodies.decompress(body, request.headers.get("Content-Encoding", ""),
                                   limit=settings.TRACE_DECOMPRESSED_MAX_BYTES)
        with stopwatch.phase("parse"):
            batch = decode(data)
        with stopwatch.phase("validate"):
            ops, errors = [], []
            for run_kind, loc, raw, part_id in batch.runs:
                op, op_errors = run_op_from_wire(raw, kind=kind or run_kind, loc=loc, run_id=run_id or part_id)
                errors += op_errors
                if op is not None:
                    ops.append(op)
            if errors:
                raise RequestValidationError(errors)
        try:
            result = services.runs_ingest(workspace=workspace, ops=ops, stopwatch=stopwatch)
        except OperationalError as exc:
            # A batch is one transaction: nothing of it is stored, and a 5xx makes the SDK send it again.
            raise database_unavailable(exc, "Nothing of this batch was stored") from exc
        stopwatch.record(route=request.path, encoding=request.headers.get("Content-Encoding", "identity"),
                         runs=len(ops), bytes=len(body))
        return Response({"post": result.posts, "patch": result.patches, "ignored_parts": batch.ignored_parts,
                         "not_stored": [str(run_id) for run_id in result.not_stored]}, status=202)


def _single_run(data: bytes) -> ingest_bodies.RawBatch:
    return ingest_bodies.RawBatch(runs=[("", ["body"], ingest_bodies.loads(data, ["body"]), None)])


class RunsBatchApi(_IngestApi):
    parser_classes = [JSONParser]

    class InputSerializer(serializers.Serializer):
        post = RunInputSerializer(many=True, required=False, allow_null=True)
        patch = RunInputSerializer(many=True, required=False, allow_null=True)

        class Meta:
            ref_name = "TracingRunBatch"

    @extend_schema(request=InputSerializer, responses={202: IngestOutputSerializer},
                   description="Create and update runs in one batch; atomic: one invalid run rejects the batch.")
    def post(self, request):
        return self.ingest(request, ingest_bodies.batch_from_json)


class RunsMultipartApi(_IngestApi):
    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": OpenApiTypes.OBJECT}, responses={202: IngestOutputSerializer},
                   description="The SDK's multipart format (parts `post.<id>`, `patch.<id>`, "
                   "`post.<id>.inputs` …), plain or with `Content-Encoding: zstd`. Atomic like /runs/batch.")
    def post(self, request):
        content_type = request.headers.get("Content-Type", "")
        return self.ingest(request, lambda data: ingest_bodies.batch_from_multipart(data, content_type))


class RunCreateApi(_IngestApi):
    parser_classes = [JSONParser]

    @extend_schema(request=RunInputSerializer, responses={202: IngestOutputSerializer})
    def post(self, request):
        return self.ingest(request, _single_run, kind="post")


class RunUpdateApi(_IngestApi):
    parser_classes = [JSONParser]

    @extend_schema(request=RunInputSerializer(partial=True), responses={202: IngestOutputSerializer})
    def patch(self, request, run_id):
        return self.ingest(request, _single_run, kind="patch", run_id=run_id)


def _cost() -> serializers.DecimalField:
    """A cost as the Run model stores it (20 digits, 10 after the point), written as a JSON number, or null."""
    return serializers.DecimalField(max_digits=20, decimal_places=10, coerce_to_string=False, allow_null=True)


class RunOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    tenant_id = serializers.UUIDField(source="workspace_id")
    session_id = serializers.UUIDField()
    trace_id = serializers.UUIDField()
    parent_run_id = serializers.UUIDField(allow_null=True)
    parent_run_ids = serializers.ListField(child=serializers.UUIDField())
    reference_example_id = serializers.UUIDField(allow_null=True)
    name = serializers.CharField()
    run_type = serializers.CharField()
    start_time = serializers.DateTimeField()
    end_time = serializers.DateTimeField(allow_null=True)
    status = serializers.CharField()
    is_root = serializers.BooleanField()
    dotted_order = serializers.CharField()
    trace_tier = serializers.CharField(allow_null=True)
    inputs = serializers.DictField()
    outputs = serializers.DictField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    extra = serializers.DictField()
    events = serializers.ListField(child=serializers.DictField())
    tags = serializers.ListField(child=serializers.CharField())
    feedback_stats = serializers.DictField(allow_null=True)
    total_tokens = serializers.IntegerField(allow_null=True)
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    total_cost = _cost()
    prompt_cost = _cost()
    completion_cost = _cost()
    first_token_time = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "TracingRun"


class RunDetailApi(APIView):
    required_permission = "tracing:read"

    OutputSerializer = RunOutputSerializer

    @extend_schema(responses=OutputSerializer)
    def get(self, request, run_id):
        run = selectors.run_get(workspace=request.user.workspace, run_id=run_id)
        return Response(self.OutputSerializer(run).data)


class SessionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    tenant_id = serializers.UUIDField(source="workspace_id")
    start_time = serializers.DateTimeField(source="created_at")

    class Meta:
        ref_name = "TracingSession"


class SessionListApi(APIView):
    required_permission = "tracing:read"

    class FilterSerializer(serializers.Serializer):
        name = serializers.CharField(required=False, help_text="Only the project with this exact name.")
        limit = limit_field(default=100, maximum=100)
        offset = offset_field()

    OutputSerializer = SessionOutputSerializer

    @extend_schema(parameters=[FilterSerializer], responses=OutputSerializer(many=True))
    def get(self, request):
        params = validated_query(self.FilterSerializer, request.query_params)
        projects = selectors.project_list(workspace=request.user.workspace, name=params.get("name"))
        page = projects[params["offset"]:params["offset"] + params["limit"]]
        return Response(self.OutputSerializer(page, many=True).data)


class SessionDetailApi(APIView):
    required_permission = "tracing:read"

    class OutputSerializer(SessionOutputSerializer):
        run_count = serializers.IntegerField()
        first_run_start_time = serializers.DateTimeField(allow_null=True)
        last_run_start_time = serializers.DateTimeField(allow_null=True)

        class Meta:
            ref_name = "TracingSessionWithStats"

    @extend_schema(responses=OutputSerializer)
    def get(self, request, session_id):
        project = selectors.project_get(workspace=request.user.workspace, project_id=session_id)
        return Response(self.OutputSerializer(project).data)

"""The Agent Server's Run as its clients send and read it, shared by the run views (api_runs.py) and the run
webhook (after_run.py): the body that creates a chat run, and the run's output shape."""

from __future__ import annotations

from rest_framework import serializers

from agentserver.selectors import RUN_STATUS_NAMES

MULTITASK_STRATEGIES = ["reject", "rollback", "interrupt", "enqueue"]
# Kwargs of a run as the Agent Server shows them, in its order (the run also keeps its `checkpoint`, unshown).
KWARG_NAMES = ("input", "command", "config", "context", "stream_mode", "interrupt_before", "interrupt_after",
               "webhook", "feedback_keys", "temporary", "subgraphs", "resumable", "checkpoint_during",
               "durability")


class StreamModeField(serializers.Field):
    """A stream mode or a list of them (checked against the known modes by services.run_create)."""

    def to_internal_value(self, data):
        modes = [data] if isinstance(data, str) else data
        if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
            raise serializers.ValidationError("must be a stream mode or a list of stream modes")
        return modes

    def to_representation(self, value):
        return value


class NodesField(serializers.Field):
    """`"*"` or a list of node names (interrupt_before / interrupt_after)."""

    def to_internal_value(self, data):
        if data == "*" or (isinstance(data, list) and all(isinstance(n, str) for n in data)):
            return data
        raise serializers.ValidationError('must be "*" or a list of node names')

    def to_representation(self, value):
        return value


class RunCreateSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunCreateInput"

    assistant_id = serializers.CharField()
    input = serializers.JSONField(required=False, allow_null=True)
    command = serializers.DictField(required=False, allow_null=True)
    config = serializers.DictField(required=False, allow_null=True)
    context = serializers.DictField(required=False, allow_null=True)  # type: ignore[assignment]  # a field, not Serializer.context
    metadata = serializers.DictField(required=False, allow_null=True)
    stream_mode = StreamModeField(required=False, allow_null=True)
    stream_subgraphs = serializers.BooleanField(required=False, default=False)
    stream_resumable = serializers.BooleanField(required=False, default=False)
    interrupt_before = NodesField(required=False, allow_null=True)
    interrupt_after = NodesField(required=False, allow_null=True)
    webhook = serializers.CharField(required=False, allow_null=True, max_length=2048)
    checkpoint = serializers.DictField(required=False, allow_null=True)
    checkpoint_id = serializers.CharField(required=False, allow_null=True)
    checkpoint_during = serializers.BooleanField(required=False, allow_null=True)
    multitask_strategy = serializers.ChoiceField(MULTITASK_STRATEGIES, required=False, allow_null=True)
    if_not_exists = serializers.ChoiceField(["create", "reject"], required=False, allow_null=True)
    on_disconnect = serializers.ChoiceField(["cancel", "continue"], required=False, allow_null=True)
    on_completion = serializers.ChoiceField(["delete", "keep"], required=False, allow_null=True)
    after_seconds = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=10 ** 7)
    durability = serializers.ChoiceField(["sync", "async", "exit"], required=False, allow_null=True)
    feedback_keys = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    langsmith_tracer = serializers.DictField(required=False, allow_null=True)
    strict_resume = serializers.BooleanField(required=False, allow_null=True)


class RunOutputSerializer(serializers.Serializer):
    """A chat run as the Agent Server's Run. The times stay datetimes (ReadOnlyField), which the renderer writes as
    it writes every other time of these answers; DRF's DateTimeField would write `Z` for `+00:00`."""

    run_id = serializers.UUIDField(source="pk")
    thread_id = serializers.CharField()
    assistant_id = serializers.SerializerMethodField()
    created_at = serializers.ReadOnlyField()
    updated_at = serializers.ReadOnlyField()
    status = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    kwargs = serializers.SerializerMethodField()
    multitask_strategy = serializers.SerializerMethodField()
    langsmith_session_name = serializers.SerializerMethodField()

    def get_assistant_id(self, run) -> str | None:
        return run.assistant_id or None

    def get_status(self, run) -> str | None:
        return RUN_STATUS_NAMES.get(run.status)

    def get_metadata(self, run) -> dict:
        return run.metadata or {}

    def get_kwargs(self, run) -> dict:
        kwargs = run.kwargs or {}
        return {name: kwargs.get(name) for name in KWARG_NAMES}

    def get_multitask_strategy(self, run) -> str:
        return run.multitask_strategy or "reject"

    def get_langsmith_session_name(self, run) -> None:
        return None

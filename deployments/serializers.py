"""The control plane's shapes that several views share, as in LangSmith's OpenAPI spec.

Each view in api.py, api_revision_logs.py and api_uploads.py nests the shapes only it uses. Every
request field is nullable (real clients send explicit nulls) and unknown keys are ignored
(langgraph-cli sends `revision_source` and `tracked_packages`). Secrets are write-only: responses
carry their names. Output serializers read models: a deployment, a revision, a log line.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.exceptions import RequestValidationError
from core.pagination import limit_field
from deployments import resources, services, states
from deployments.models import Deployment, RevisionLog
from deployments.states import RevisionStatus

DEPLOYMENT_TYPES = ["dev_free", "dev", "prod", "dev_zero", "dev_free_zero"]


def parse_path_uuid(value: str, name: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise RequestValidationError.single(["path", name], "Input should be a valid UUID", "uuid_parsing") from None


_EPOCH_MS_TEXT = re.compile(r"^\s*[0-9]+(\.[0-9]*)?\s*$")


@extend_schema_field({"anyOf": [{"type": "string", "format": "date-time"},
                                {"type": "string", "pattern": r"^\s*[0-9]{1,14}(\.[0-9]*)?\s*$"},
                                {"type": "number", "minimum": 0, "maximum": 253402300799999}]})
class TimestampField(serializers.Field):
    """An ISO 8601 date-time or epoch milliseconds (langgraph-cli sends either)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            raise serializers.ValidationError("Input should be a valid datetime.")
        if isinstance(data, (int, float)) or (isinstance(data, str) and _EPOCH_MS_TEXT.match(data)):
            try:
                if float(data) < 0:  # before 1970: never a log line's time
                    raise ValueError
                return datetime.fromtimestamp(float(data) / 1000, tz=UTC)
            except (OverflowError, OSError, ValueError):
                raise serializers.ValidationError("Input should be a valid datetime.") from None
        try:
            parsed = parse_datetime(data) if isinstance(data, str) else None
            # Compared in UTC by the database: a time with no UTC equivalent (year 1 at +01:00) is invalid too.
            parsed = parsed and (parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC))
        except (ValueError, OverflowError):  # well-formed but impossible, such as February 30th
            parsed = None
        if parsed is None:
            raise serializers.ValidationError("Input should be a valid datetime.")
        return parsed

    def to_representation(self, value):
        return value.isoformat()


# --- requests -----------------------------------------------------------------------------------------------------
class SecretInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255, trim_whitespace=False)
    value = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=65536)


def secrets_input():
    # Not `SecretInputSerializer(many=True, allow_null=True)`: many=True hands allow_null to each item too, and
    # `"secrets": [null]` would then reach the service as a None secret. The list may be null; its items not.
    return serializers.ListSerializer(child=SecretInputSerializer(), required=False, allow_null=True)


def _nullable_char(**kwargs):
    return serializers.CharField(required=False, allow_null=True, allow_blank=True, **kwargs)


def _resource_spec_schema() -> dict:
    """LangSmith's ResourceSpec as OpenAPI: every field nullable, ranges as deployments.resources checks them, other
    keys allowed (accepted and reported as not applied in the deploy log)."""
    properties: dict[str, dict] = {}
    for field, (integer, low, high) in resources.NUMBER_FIELDS.items():
        properties[field] = {"type": "integer" if integer else "number", "minimum": low, "maximum": high,
                             "nullable": True}
    properties.update({field: {"type": "object", "nullable": True} for field in resources.OBJECT_FIELDS})
    properties.update({field: {"type": "array", "items": {}, "nullable": True} for field in resources.LIST_FIELDS})
    properties.update({field: {"type": "string", "nullable": True} for field in resources.STRING_FIELDS})
    return {"type": "object", "nullable": True, "properties": properties, "additionalProperties": True}


@extend_schema_field(_resource_spec_schema())
class ResourceSpecField(serializers.JSONField):
    """`resource_spec`: a JSON object whose known fields are in range (deployments.resources); a 422 names the
    field, as `["body", "source_config", "resource_spec", "min_scale"]`."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Input should be a valid dictionary.", code="dict_type")
        errors = resources.spec_errors(value)
        if errors:
            raise serializers.ValidationError(
                {e.field: [serializers.ErrorDetail(e.msg, code=e.type)] for e in errors})
        return value


class SourceConfigInputSerializer(serializers.Serializer):
    integration_id = serializers.UUIDField(required=False, allow_null=True)
    repo_url = _nullable_char(max_length=2048)
    deployment_type = serializers.ChoiceField(DEPLOYMENT_TYPES, required=False, allow_null=True)
    build_on_push = serializers.BooleanField(required=False, allow_null=True)
    custom_url = _nullable_char(max_length=2048)
    resource_spec = ResourceSpecField(required=False, allow_null=True)
    listener_id = serializers.UUIDField(required=False, allow_null=True)
    listener_config = serializers.JSONField(required=False, allow_null=True)
    install_command = _nullable_char(max_length=4096)
    build_command = _nullable_char(max_length=4096)


class SourceRevisionConfigInputSerializer(serializers.Serializer):
    repo_ref = _nullable_char(max_length=255)
    langgraph_config_path = _nullable_char(max_length=1024)
    image_uri = _nullable_char(max_length=2048)
    source_tarball_path = _nullable_char(max_length=1024)


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 128, "pattern": r"^(?!\s*$)[^\x00-\x1f]*$"})
class DeploymentNameField(serializers.CharField):
    """A name without control characters (validate_name); DRF trims the edges."""


_UUID = r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"


def comma_list_pattern(item: str) -> str:
    """A comma-separated list of `item`s; blank entries and spaces around items are ignored."""
    entry = rf"\s*(?:{item})?\s*"
    return rf"^{entry}(?:,{entry})*$"


@extend_schema_field({"type": "string", "pattern": comma_list_pattern(_UUID)})
class UuidListField(serializers.CharField):
    pass


class QueryUuidField(serializers.UUIDField):
    """A UUID in a query parameter, refused as FastAPI refuses one (`uuid_parsing`), like a UUID in a path."""

    def to_internal_value(self, data):
        try:
            return uuid.UUID(data)
        except (TypeError, ValueError):
            raise serializers.ValidationError("Input should be a valid UUID", code="uuid_parsing") from None


class UuidQueryListField(serializers.ListField):
    """UUIDs from a query parameter, repeated (`?ids=a&ids=b`, the spec's array) or comma-separated (`?ids=a,b`)."""

    def __init__(self, **kwargs):
        super().__init__(child=QueryUuidField(), allow_empty=False, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, list) and all(isinstance(value, str) for value in data):
            data = [part.strip() for value in data for part in value.split(",") if part.strip()]
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "pattern": comma_list_pattern("|".join(RevisionStatus.values))})
class RevisionStatusListField(serializers.CharField):
    pass


# Which log lines to read: the body of the /v1 log endpoints, and the query of the /v2 one.
class LogParamsSerializer(serializers.Serializer):
    limit = limit_field(default=50, maximum=1000)
    # The id of the last line seen (a cursor, not a count): any 64-bit id.
    offset = serializers.RegexField(r"^\d{1,19}$", required=False, allow_null=True)
    order = serializers.ChoiceField(["asc", "desc"], default="asc")
    start_time = TimestampField(required=False, allow_null=True)
    end_time = TimestampField(required=False, allow_null=True)
    level = serializers.ChoiceField(RevisionLog.Level.values, required=False, allow_null=True)
    query = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=1000)
    # In the spec's log query, accepted and ignored: log lines here are not kept per chat run.
    run_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)

    class Meta:
        ref_name = "LogParams"

    def validate_offset(self, value):
        if value is not None and int(value) >= 2**63:
            raise serializers.ValidationError("Input should be a log line id below 2^63.")
        return value

    def to_internal_value(self, data):
        if hasattr(data, "dict"):  # a QueryDict: one value per parameter; an empty one is not given
            data = {name: value for name, value in data.dict().items() if value != ""}
        if isinstance(data, dict) and isinstance(data.get("level"), str):
            data = {**data, "level": data["level"].upper()}
        return super().to_internal_value(data)


# --- responses ----------------------------------------------------------------------------------------------------
# (Comments, not docstrings, on serializers: a docstring would become the schema's description.)
# A deployment's source_config as stored (a key never stored is null), its type, and the URL it is served at.
class SourceConfigOutputSerializer(serializers.Serializer):
    integration_id = serializers.CharField(allow_null=True)
    repo_url = serializers.CharField(allow_null=True)
    deployment_type = serializers.CharField(allow_null=True)
    build_on_push = serializers.BooleanField(allow_null=True)
    custom_url = serializers.CharField()
    resource_spec = serializers.JSONField(allow_null=True)
    listener_id = serializers.CharField(allow_null=True)
    listener_config = serializers.JSONField(allow_null=True)
    install_command = serializers.CharField(allow_null=True)
    build_command = serializers.CharField(allow_null=True)

    def to_representation(self, deployment: Deployment):
        return super().to_representation({**deployment.source_config, "deployment_type": deployment.deployment_type,
                                          "custom_url": services.custom_url(deployment)})


class SourceRevisionConfigOutputSerializer(serializers.Serializer):
    repo_ref = serializers.CharField(allow_null=True)
    langgraph_config_path = serializers.CharField(allow_null=True)
    image_uri = serializers.CharField(allow_null=True)
    source_tarball_path = serializers.CharField(allow_null=True)
    repo_commit_sha = serializers.CharField(allow_null=True)

    def get_attribute(self, instance):
        # A deployment with no revision yet answers the object all the same, with every field null.
        return super().get_attribute(instance) or {}


class NotProvidedField(serializers.CharField):
    """A field of the control plane's shape that this service has no value for (no images are built here)."""

    def get_attribute(self, instance):
        return None


class SecretNameOutputSerializer(serializers.Serializer):
    name = serializers.CharField(source="*")


class DeploymentOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    tenant_id = serializers.UUIDField(source="workspace_id")
    name = serializers.CharField()
    # DRF's metaclass takes declared fields off the class (the stubs see a clash with Field.source).
    source = serializers.CharField()  # type: ignore[assignment]
    source_config = SourceConfigOutputSerializer(source="*")
    source_revision_config = SourceRevisionConfigOutputSerializer(source="latest_revision")
    secrets = SecretNameOutputSerializer(many=True, source="secret_names")
    status = serializers.ChoiceField(Deployment.Status.values)
    latest_revision_id = serializers.UUIDField(allow_null=True)
    active_revision_id = serializers.UUIDField(allow_null=True)
    image_version = NotProvidedField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# The statuses whose reason a revision's JSON carries (`status_message`).
EXPLAINED_STATUSES = states.FAILED | {RevisionStatus.INTERRUPTED, RevisionStatus.SKIPPED}


class RevisionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    status = serializers.ChoiceField(RevisionStatus.values)
    # DRF's metaclass takes declared fields off the class (the stubs see a clash with Field.source).
    source = serializers.CharField()  # type: ignore[assignment]
    source_revision_config = SourceRevisionConfigOutputSerializer(source="*")
    status_message = serializers.SerializerMethodField(
        help_text="Why the revision ended as it did: the error line of a *_FAILED revision, or what interrupted or "
        "skipped it. Null in any other status.")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_status_message(self, revision) -> str | None:
        return (revision.status_message or None) if revision.status in EXPLAINED_STATUSES else None


class EpochMillisecondsField(serializers.IntegerField):
    def to_representation(self, value: Any) -> int:
        """`value`: a datetime (IntegerField's own method takes an int, hence `Any`)."""
        return int(value.timestamp() * 1000)


class LogEntryOutputSerializer(serializers.Serializer):
    id = serializers.CharField()
    timestamp = EpochMillisecondsField(help_text="Milliseconds since the epoch.")
    level = serializers.CharField()
    message = serializers.CharField()
    revision_id = serializers.UUIDField(help_text="The revision whose output the line is.")


class LogsOutputSerializer(serializers.Serializer):
    logs = LogEntryOutputSerializer(many=True)
    next_offset = serializers.CharField(allow_null=True)

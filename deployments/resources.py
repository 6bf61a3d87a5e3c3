"""A revision's `resource_spec`: LangSmith's fields, their ranges, and the values a runner serves it with.

LangSmith sizes a deployment's containers from `source_config.resource_spec` (its ResourceSpec). The rules every
runner shares live here: which values are out of range (a 422, as LangSmith's pydantic model answers), the defaults
by deployment type (one replica for the Development types, two for `prod`, LangSmith's defaults), and the values
that follow from a spec (the replica count, the memory limit, which defaults to twice the request). What a runner
cannot apply it says in the revision's deploy log (deployments/runners/local.py): no field is silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_REPLICAS = 10
# LangSmith's Development types run up to one replica; a deployment without a type is one of them.
DEV_TYPES = frozenset({None, "dev", "dev_free", "dev_zero", "dev_free_zero"})
DEFAULT_REPLICAS = {"prod": 2}
MEMORY_MB_RANGE = (128, 65536)
CPU_RANGE, CPU_LIMIT_RANGE = (0.1, 8), (0.1, 16)

# Each numeric field: (integer only, minimum, maximum). LangSmith documents the CPU ranges; the scales follow its
# "up to 10 replicas"; memory must fit what one machine can have.
NUMBER_FIELDS: dict[str, tuple[bool, float, float]] = {
    **{f"{prefix}{name}": (True, 1, MAX_REPLICAS) for prefix in ("", "queue_") for name in ("min_scale", "max_scale")},
    **{f"{prefix}memory{suffix}": (True, *MEMORY_MB_RANGE)
       for prefix in ("", "queue_", "redis_", "db_") for suffix in ("_mb", "_limit_mb")},
    **{f"{prefix}cpu": (False, *CPU_RANGE) for prefix in ("", "queue_", "redis_", "db_")},
    **{f"{prefix}cpu_limit": (False, *CPU_LIMIT_RANGE) for prefix in ("", "queue_", "redis_", "db_")},
    "db_storage_gi": (True, 1, 65536),
    "db_max_connections": (True, 1, 100000),
}
# Kubernetes-shaped fields: only their JSON type is checked (no runner here applies them).
OBJECT_FIELDS = ("labels", "annotations")
LIST_FIELDS = ("image_pull_secrets", "volumes", "volume_mounts", "init_containers", "sidecars")
STRING_FIELDS = ("service_account_name",)
FIELDS = frozenset(NUMBER_FIELDS) | set(OBJECT_FIELDS) | set(LIST_FIELDS) | set(STRING_FIELDS)
# (request, limit) pairs: a limit below its request is refused, as Kubernetes refuses it.
_PAIRS = [("min_scale", "max_scale"), ("queue_min_scale", "queue_max_scale"),
          *((f"{p}memory_mb", f"{p}memory_limit_mb") for p in ("", "queue_", "redis_", "db_")),
          *((f"{p}cpu", f"{p}cpu_limit") for p in ("", "queue_", "redis_", "db_"))]


@dataclass(frozen=True)
class SpecError:
    """One refused field, in pydantic's terms (the caller puts it under its location)."""

    field: str
    msg: str
    type: str


def spec_errors(spec: dict[str, Any]) -> list[SpecError]:
    """What is out of range or of the wrong type in `spec` (null values are absent values)."""
    errors = []
    for field, value in spec.items():
        if value is None:
            continue
        error = field_error(field, value)
        if error:
            errors.append(SpecError(field, *error))
    if errors:
        return errors
    for request, limit in _PAIRS:
        if spec.get(request) is not None and spec.get(limit) is not None and spec[limit] < spec[request]:
            errors.append(SpecError(limit, f"Input should be greater than or equal to {request} ({spec[request]})",
                                    "greater_than_equal"))
    return errors


def field_error(field: str, value: Any) -> tuple[str, str] | None:
    """(pydantic's message, its type) when `value` is out of range or of the wrong type for `field`; else None."""
    if field in NUMBER_FIELDS:
        integer, low, high = NUMBER_FIELDS[field]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return ("Input should be a valid integer", "int_type") if integer else \
                ("Input should be a valid number", "float_type")
        if integer and value != int(value):
            return "Input should be a valid integer, got a number with a fractional part", "int_from_float"
        if value < low:
            return f"Input should be greater than or equal to {low}", "greater_than_equal"
        if value > high:
            return f"Input should be less than or equal to {high}", "less_than_equal"
    elif field in OBJECT_FIELDS and not isinstance(value, dict):
        return "Input should be a valid dictionary", "dict_type"
    elif field in LIST_FIELDS and not isinstance(value, list):
        return "Input should be a valid list", "list_type"
    elif field in STRING_FIELDS and not isinstance(value, str):
        return "Input should be a valid string", "string_type"
    return None


def deployment_type_errors(spec: dict[str, Any], deployment_type: str | None) -> list[SpecError]:
    """A Development deployment runs one replica (LangSmith: "up to 1 replica"): more is refused, not clamped, so
    that nobody believes a dev deployment is redundant."""
    if deployment_type not in DEV_TYPES:
        return []
    return [SpecError(field, f"Input should be less than or equal to 1: a {deployment_type or 'dev'} deployment "
                             "runs one replica; use a prod deployment for more", "less_than_equal")
            for field in ("min_scale", "max_scale") if (spec.get(field) or 0) > 1]


@dataclass(frozen=True)
class Resources:
    """What a revision is served with: how many API processes, and each one's memory limit (None: no limit)."""

    replicas: int
    replicas_reason: str
    memory_limit_mb: int | None
    memory_reason: str


def effective(spec: dict[str, Any] | None, deployment_type: str | None) -> Resources:
    """The replica count and memory limit that follow from a spec and the deployment's type. A value the API would
    refuse now (stored by an older version of the service) counts as absent, and a dev deployment gets one replica."""
    spec = {k: v for k, v in (spec or {}).items() if v is not None and field_error(k, v) is None}
    default = DEFAULT_REPLICAS.get(deployment_type or "", 1)
    if "min_scale" in spec:
        replicas, reason = int(spec["min_scale"]), "min_scale"
    elif "max_scale" in spec and spec["max_scale"] < default:
        replicas, reason = int(spec["max_scale"]), f"max_scale, below the default of {default}"
    else:
        replicas, reason = default, f"the default for a {deployment_type or 'dev'} deployment"
    if deployment_type in DEV_TYPES and replicas > 1:
        replicas, reason = 1, f"a {deployment_type or 'dev'} deployment runs one replica"
    if "memory_limit_mb" in spec:
        memory, memory_reason = int(spec["memory_limit_mb"]), "memory_limit_mb"
    elif "memory_mb" in spec:
        memory, memory_reason = 2 * int(spec["memory_mb"]), "twice memory_mb, LangSmith's default limit"
    else:
        memory, memory_reason = None, "resource_spec sets no memory_mb or memory_limit_mb"
    return Resources(replicas, reason, memory, memory_reason)


def revision_resources(revision) -> Resources:
    """The resources of a revision (deployments.models.Revision), by its spec and its deployment's type."""
    return effective(revision.resource_spec, revision.deployment.deployment_type)

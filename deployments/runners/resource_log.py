"""What a revision's deploy log says of its resource_spec under the local runner: what it is served with, and why
each field the local runner does not apply is not applied (no field is stored and silently ignored)."""

from __future__ import annotations

import json

from deployments import resources
from deployments.models import Revision
from deployments.runners.base import StepContext


def log_resources(ctx: StepContext, revision: Revision, wanted: resources.Resources) -> None:
    """Say what the revision is served with, and every field of its resource_spec this runner does not apply."""
    processes = f"{wanted.replicas} serving process{'es' if wanted.replicas > 1 else ''} ({wanted.replicas_reason})"
    memory = (f"a memory limit of {wanted.memory_limit_mb} MiB on each ({wanted.memory_reason})"
              if wanted.memory_limit_mb else f"no memory limit ({wanted.memory_reason})")
    ctx.log(f"Resources: {processes}, {memory}.")
    spec = {field: value for field, value in (revision.resource_spec or {}).items() if value is not None}
    # Applied (the line above): the replica count and the memory limit, which memory_mb sets without a limit.
    has_limit = "memory_limit_mb" in spec and not resources.field_error("memory_limit_mb", spec["memory_limit_mb"])
    applied = {"min_scale", "memory_limit_mb"} | (set() if has_limit else {"memory_mb"})
    for field, value in spec.items():
        if resources.field_error(field, value):  # stored by a version of the service that did not check it
            reason = "it is out of range"
        elif field in applied:
            continue
        else:
            reason = not_applied_reason(field)
        ctx.log(f"resource_spec.{field} ({json.dumps(value)[:80]}) is not applied: {reason}.", "WARNING")


def not_applied_reason(field: str) -> str:
    """Why the local runner does not apply a field of resource_spec."""
    if field == "max_scale":
        return "the local runner does not autoscale; it keeps min_scale processes running"
    if field == "memory_mb":
        return "a request, and the local runner reserves no memory (memory_limit_mb is the limit applied)"
    if field in ("cpu", "cpu_limit"):
        return "the local runner does not limit or reserve CPU"
    if field.startswith("queue_"):
        return "runs execute in each serving process's own executor; the local runner starts no queue workers"
    if field.startswith("redis_"):
        return "the local runner starts no Redis of a deployment's own"
    if field.startswith("db_"):
        return "the local runner does not size the deployment's database"
    if field in resources.FIELDS:
        return "a Kubernetes setting, and the local runner starts no containers"
    return "it is not a field of LangSmith's ResourceSpec"

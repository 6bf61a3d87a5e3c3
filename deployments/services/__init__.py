"""Writes of the deployment control plane, its face to the rest of the app: deployments (deployment_records),
revisions and the process's one runner (revision_records), and their build and deploy logs (revision_logs)."""

from deployments.services.deployment_records import (
    BulkDeleteResult,
    CreateResult,
    deployment_create,
    deployment_database_ensure,
    deployment_delete,
    deployment_delete_many,
    deployment_purge,
    deployment_teardown,
    deployment_update,
    secrets_decode,
)
from deployments.services.revision_logs import log_append, log_append_batch, revision_log_sink
from deployments.services.revision_records import (
    StaleRevision,
    custom_url,
    get_runner,
    revision_activate,
    revision_commit_set,
    revision_create,
    revision_interrupt,
    revision_redeploy,
    revision_replica_set,
    revision_serving_set,
    revision_transition,
)

__all__ = [
    "BulkDeleteResult", "CreateResult", "StaleRevision", "custom_url", "deployment_create",
    "deployment_database_ensure", "deployment_delete", "deployment_delete_many", "deployment_purge",
    "deployment_teardown", "deployment_update", "get_runner", "log_append", "log_append_batch", "revision_activate",
    "revision_commit_set", "revision_create", "revision_interrupt", "revision_log_sink", "revision_redeploy",
    "revision_replica_set", "revision_serving_set", "revision_transition", "secrets_decode",
]

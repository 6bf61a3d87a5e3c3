"""Writes for revisions: making one (from a PATCH, a POST …/revisions or a redeploy), interrupting it, its status,
and where it is served. Revision statuses change only through `revision_transition`; which change is legal is defined
in `deployments.states`. This module also holds the process's one runner (`get_runner`), which writes what it learns
about a revision back through `_RunnerRecords`."""

from __future__ import annotations

import uuid
from functools import cache

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from core.exceptions import BadRequest, Conflict, RequestValidationError
from core.rest_errors import validation_item
from core.services import job_enqueue
from deployments import resources, runners, sources, states, uploads
from deployments.models import Deployment, Revision, RevisionLog
from deployments.processes import LineSink
from deployments.services.revision_logs import log_append, revision_log_sink
from deployments.states import RevisionStatus

REVISION_FIELDS = ("repo_ref", "langgraph_config_path", "image_uri", "source_tarball_path")
IMMUTABLE_SOURCE_CONFIG = ("integration_id", "repo_url", "deployment_type", "listener_id", "listener_config")
MUTABLE_SOURCE_CONFIG = ("build_on_push", "install_command", "build_command", "resource_spec")


def custom_url(deployment: Deployment) -> str:
    return f"{settings.PUBLIC_BASE_URL}/deployments/{deployment.id}"


def revision_config_merged(source: str, base: dict, changes: dict) -> dict:
    """The latest revision's config with the non-null fields of `changes` applied, checked for `source`."""
    config = {field: base.get(field) for field in REVISION_FIELDS}
    config.update({k: v for k, v in changes.items() if k in REVISION_FIELDS and v is not None})
    is_image = source in (Deployment.Source.EXTERNAL_DOCKER, Deployment.Source.INTERNAL_DOCKER)
    if not is_image and config.get("image_uri"):
        raise BadRequest(f"image_uri is only for image deployments; this deployment's source is {source}.")
    if config.get("source_tarball_path") and source != Deployment.Source.INTERNAL_SOURCE:
        raise BadRequest(f"source_tarball_path is only for internal_source deployments, not {source}.")
    sources.check_repo_ref(config.get("repo_ref"))
    path = config.get("langgraph_config_path")
    if path is not None and (path.startswith("/") or ".." in path.split("/")):
        raise BadRequest("langgraph_config_path must be a relative path inside the project.")
    return config


def source_complete(deployment: Deployment, config: dict) -> bool:
    if deployment.source == Deployment.Source.INTERNAL_SOURCE:
        return bool(config.get("source_tarball_path"))
    return True


def resource_spec_check(spec: dict | None, deployment_type: str | None) -> None:
    """Refuse (422) a spec that asks a dev deployment for more than one replica (its ranges were checked by the
    serializer; the type is known here, on a PATCH too)."""
    errors = resources.deployment_type_errors(spec or {}, deployment_type)
    if errors:
        raise RequestValidationError([validation_item(["body", "source_config", "resource_spec", e.field], e.msg,
                                                      e.type) for e in errors])


def revision_insert(deployment: Deployment, config: dict, *, resource_spec: dict | None = None,
                     tracked_packages: list | None = None) -> Revision:
    """Add a revision, skip the ones it supersedes, and queue its build (in the caller's transaction). Without a
    `resource_spec` of its own it gets the deployment's (source_config.resource_spec, set on create or PATCH)."""
    if resource_spec is None:
        resource_spec = deployment.source_config.get("resource_spec")
    if deployment.source == Deployment.Source.INTERNAL_SOURCE:
        uploads.require_object(deployment, config["source_tarball_path"])
    locked = Deployment.objects.select_for_update().get(id=deployment.id)
    number = (locked.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
    for older in locked.revisions.exclude(status__in=states.TERMINAL):
        revision_transition(revision=older, to=RevisionStatus.SKIPPED,
                            message=f"Superseded by revision #{number} before it finished.")
    revision = Revision.objects.create(
        deployment=deployment, number=number, source=deployment.source,
        repo_url=deployment.source_config.get("repo_url"),
        repo_ref=config.get("repo_ref"), langgraph_config_path=config.get("langgraph_config_path") or "langgraph.json",
        image_uri=config.get("image_uri"), source_tarball_path=config.get("source_tarball_path"),
        resource_spec=resource_spec, tracked_packages=tracked_packages or [], secrets=deployment.secrets,
    )
    deployment.latest_revision = revision
    Deployment.objects.filter(id=deployment.id).update(latest_revision=revision, updated_at=timezone.now())
    log_append(revision=revision, type=RevisionLog.Type.BUILD, lines=[f"Revision #{number} created."])
    job_enqueue(kind="deployments.build", payload={"revision_id": str(revision.id)})
    revision_transition(revision=revision, to=RevisionStatus.QUEUED)
    return revision


def revision_create(*, deployment: Deployment, data: dict) -> Revision:
    """Make a new revision, always: the latest revision's source with the non-null `source_revision_config` fields.

    The revision a PATCH with only `source_revision_config` would make, even when nothing changed. Secrets and
    source_config are the deployment's: a PATCH changes them (and makes a revision), so they are refused here.
    """
    for field in ("secrets", "source_config"):
        if data.get(field) is not None:
            raise BadRequest(f"{field} cannot be set on a revision: PATCH /v2/deployments/{deployment.id} changes "
                             "it and makes a revision.")
    require_not_deleting(deployment)
    immutable_fields_check(deployment, data)
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(id=deployment.id)
        return revision_next(deployment, non_null(data.get("source_revision_config")),
                              tracked_packages=data.get("tracked_packages"))


def revision_next(deployment: Deployment, changes: dict, *, resource_spec: dict | None = None,
                   tracked_packages: list | None = None) -> Revision:
    """The revision a PATCH or a POST …/revisions makes: the latest config with `changes`, checked (in the caller's
    transaction, the deployment locked)."""
    get_runner().require(deployment.source)
    config = revision_config_merged(deployment.source, _latest_config(deployment), changes)
    if not source_complete(deployment, config):
        raise BadRequest("source_tarball_path is required: upload the source with "
                         f"POST /v2/deployments/{deployment.id}/upload-url first.")
    return revision_insert(deployment, config, resource_spec=resource_spec, tracked_packages=tracked_packages)


def non_null(values: dict | None) -> dict:
    return {k: v for k, v in (values or {}).items() if v is not None}


def require_not_deleting(deployment: Deployment) -> None:
    if deployment.status == Deployment.Status.AWAITING_DELETE:
        raise Conflict(f"Deployment ID {deployment.id} is being deleted.")


def immutable_fields_check(deployment: Deployment, data: dict) -> None:
    for field in ("name", "source"):
        if data.get(field) is not None and data[field] != getattr(deployment, field):
            raise BadRequest(f"{field} cannot be changed after a deployment is created.")
    source = data.get("revision_source")
    if source is not None and source != deployment.source:
        raise BadRequest(f"revision_source {source} does not match this deployment's source {deployment.source}.")
    source_config = data.get("source_config") or {}
    stored = {**deployment.source_config, "deployment_type": deployment.deployment_type}
    for key in IMMUTABLE_SOURCE_CONFIG:
        if source_config.get(key) is not None and source_config[key] != stored.get(key):
            raise BadRequest(f"source_config.{key} cannot be changed after a deployment is created.")
    url = source_config.get("custom_url")
    if url is not None and url != custom_url(deployment):
        raise BadRequest("source_config.custom_url is set by this service and cannot be changed.")


def _latest_config(deployment: Deployment) -> dict:
    latest = deployment.latest_revision
    return {field: getattr(latest, field) for field in REVISION_FIELDS} if latest else {}


def revision_redeploy(*, deployment: Deployment, revision: Revision) -> Deployment:
    """Build and deploy `revision`'s source again, as a new revision with the deployment's current secrets."""
    require_not_deleting(deployment)
    get_runner().require(deployment.source)
    config = {field: getattr(revision, field) for field in REVISION_FIELDS}
    with transaction.atomic():
        revision_insert(deployment, config, resource_spec=revision.resource_spec,
                         tracked_packages=revision.tracked_packages)
    deployment.refresh_from_db()
    return deployment


def revision_interrupt(*, revision: Revision) -> Revision:
    """Stop a revision that is still in progress; its worker notices within a second or two."""
    interrupted = revision_transition(revision=revision, to=RevisionStatus.INTERRUPTED,
                                      message="Interrupted through the API.")
    if not interrupted:
        revision.refresh_from_db()
        raise BadRequest(f"Revision {revision.id} is {revision.status}: only a revision in progress can be "
                         "interrupted.")
    return revision


def revision_transition(*, revision: Revision, to: str, message: str = "") -> bool:
    """Move `revision` to `to` if the status machine allows it from its current status; False otherwise."""
    values = {"status": to, "updated_at": timezone.now()}
    if message:
        values["status_message"] = message
    applied = Revision.objects.filter(id=revision.id, status__in=states.predecessors(to)).update(**values) == 1
    if applied:
        revision.status = to
        if message:
            revision.status_message = message
        level = RevisionLog.Level.ERROR if to.endswith("_FAILED") else RevisionLog.Level.INFO
        log_type = RevisionLog.Type.DEPLOY if to in _DEPLOY_STATUSES else RevisionLog.Type.BUILD
        log_append(revision=revision, type=log_type, lines=[f"{to}: {message}" if message else to], level=level)
    return applied
_DEPLOY_STATUSES = {RevisionStatus.DEPLOYING, RevisionStatus.DEPLOYED, RevisionStatus.DEPLOY_FAILED}


def revision_activate(*, revision: Revision) -> Revision | None:
    """Mark a healthy revision DEPLOYED and make it the one served; return the revision it replaced.

    Raises StaleRevision when the revision was interrupted or superseded meanwhile.
    """
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(id=revision.deployment_id)
        if deployment.status == Deployment.Status.AWAITING_DELETE or not revision_transition(
                revision=revision, to=RevisionStatus.DEPLOYED, message="Serving."):
            raise StaleRevision(f"Revision {revision.id} is no longer meant to be deployed.")
        previous = deployment.active_revision
        deployment.active_revision = revision
        deployment.status = Deployment.Status.READY
        deployment.save(update_fields=["active_revision", "status", "updated_at"])
    return previous if previous and previous.id != revision.id else None


class StaleRevision(Exception):
    """The revision was interrupted, superseded or its deployment deleted while a step ran."""


def revision_serving_set(*, revision: Revision, host: str = "", token: str = "",
                         replicas: list[dict] | None = None) -> None:
    """Record where a revision is served: `replicas` ({"port", "pid"} by index) on `host` with `token`."""
    replicas = list(replicas or [])
    Revision.objects.filter(id=revision.id).update(serving_host=host, serving_replicas=replicas,
                                                   serving_token=token, updated_at=timezone.now())
    revision.serving_host, revision.serving_replicas, revision.serving_token = host, replicas, token


def revision_replica_set(*, revision: Revision, index: int, port: int, pid: int) -> None:
    """Record where replica `index` of a revision serves now (restarted alone); the others stay as recorded."""
    with transaction.atomic():
        locked = Revision.objects.select_for_update().filter(id=revision.id).first()
        if locked is None:  # deleted with its deployment meanwhile
            return
        replicas = list(locked.serving_replicas)
        replicas += [None] * (index + 1 - len(replicas))
        replicas[index] = {"port": port, "pid": pid}
        Revision.objects.filter(id=revision.id).update(serving_replicas=replicas, updated_at=timezone.now())
    revision.serving_replicas = replicas


def revision_commit_set(*, revision: Revision, sha: str) -> None:
    Revision.objects.filter(id=revision.id).update(repo_commit_sha=sha or None)
    revision.repo_commit_sha = sha or None


class _RunnerRecords(runners.RevisionRecords):
    """What the runner learns about a revision, written through the services above."""

    def commit_set(self, *, revision: Revision, sha: str) -> None:
        revision_commit_set(revision=revision, sha=sha)

    def serving_set(self, *, revision: Revision, host: str = "", token: str = "",
                    replicas: list[dict] | None = None) -> None:
        revision_serving_set(revision=revision, host=host, token=token, replicas=replicas)

    def replica_set(self, *, revision: Revision, index: int, port: int, pid: int) -> None:
        revision_replica_set(revision=revision, index=index, port=port, pid=pid)

    def log_sink(self, *, revision_id: uuid.UUID, type: str) -> LineSink:
        return revision_log_sink(revision_id=revision_id, type=type)


@cache
def get_runner() -> runners.Runner:
    """The process's one runner: the local runner keeps its child processes in memory."""
    return runners.create_runner(_RunnerRecords())

"""Writes for deployments and revisions: creation, patches, redeploys, interrupts, deletion, logs.

Revision statuses change only through `revision_transition`; which change is legal is defined
in `deployments.states`. This module also holds the process's one runner (`get_runner`), which
writes what it learns about a revision back through `_RunnerRecords`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets as random
import uuid
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import ApiKey, Workspace
from accounts.services import api_key_create, api_key_revoke
from core.exceptions import BadRequest, Conflict, NotFound, RequestValidationError
from core.rest_errors import validation_item
from core.services import job_enqueue
from deployments import databases, resources, runners, selectors, sources, states, uploads
from deployments.models import Deployment, Revision, RevisionLog
from deployments.processes import LineSink
from deployments.states import RevisionStatus
from tracing.services import project_delete, project_get_or_create

log = logging.getLogger("deployments.services")

_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
MAX_SECRETS = 200
MAX_SECRET_BYTES = 64 * 1024
# Names the serving process sets itself: a secret may not override them.
RESERVED_SECRET_NAMES = frozenset({
    "PATH", "HOME", "PYTHONPATH", "PYTHONHOME", "DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY",
    "FIELD_ENCRYPTION_KEY", "DATABASE_URL", "SQLITE_PATH", "DATA_DIR", "REDIS_URL", "PUBLIC_BASE_URL",
    "ALLOWED_HOSTS", "LANGSMITH_API_KEY", "LANGSMITH_ENDPOINT", "LANGSMITH_PROJECT", "LANGSMITH_TRACING",
    "LANGCHAIN_API_KEY", "LANGCHAIN_ENDPOINT", "LANGCHAIN_PROJECT", "LANGCHAIN_TRACING_V2",
    "LANGGRAPH_HTTP",  # langgraph.json's http section, checked at build
})
API_KEY_NAME_LENGTH = ApiKey._meta.get_field("name").max_length or 128
RESERVED_SECRET_PREFIXES = ("SERVE_GRAPHS_", "DEPLOY_", "CHAT_", "LD_")
REVISION_FIELDS = ("repo_ref", "langgraph_config_path", "image_uri", "source_tarball_path")
IMMUTABLE_SOURCE_CONFIG = ("integration_id", "repo_url", "deployment_type", "listener_id", "listener_config")
MUTABLE_SOURCE_CONFIG = ("build_on_push", "install_command", "build_command", "resource_spec")


def custom_url(deployment: Deployment) -> str:
    return f"{settings.PUBLIC_BASE_URL}/deployments/{deployment.id}"


def secrets_decode(raw: str) -> list[dict]:
    return json.loads(raw or "[]")


def _secrets_clean(secrets: list[dict]) -> list[dict]:
    names = set()
    if len(secrets) > MAX_SECRETS:
        raise BadRequest(f"At most {MAX_SECRETS} secrets are allowed.")
    for secret in secrets:
        name = secret["name"]
        if not _SECRET_NAME.match(name):
            raise BadRequest(f"Secret name {name!r} is not a valid environment variable name.")
        if name in RESERVED_SECRET_NAMES or name.startswith(RESERVED_SECRET_PREFIXES):
            raise BadRequest(f"Secret name {name!r} is reserved: the serving process sets it itself.")
        if name in names:
            raise BadRequest(f"Secret {name!r} is given twice.")
        if len(secret["value"].encode()) > MAX_SECRET_BYTES or "\x00" in secret["value"]:
            raise BadRequest(f"Secret {name!r} is too long or contains a NUL character.")
        names.add(name)
    return [{"name": s["name"], "value": s["value"]} for s in secrets]


def _secrets_set(deployment: Deployment, secrets: list[dict]) -> None:
    deployment.secrets = json.dumps(secrets)
    deployment.secret_names = [s["name"] for s in secrets]


def _fingerprint(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class CreateResult:
    deployment: Deployment
    created: bool


def deployment_create(*, workspace: Workspace, name: str, source: str, source_config: dict,
                      source_revision_config: dict, secrets: list[dict] | None,
                      idempotency_key: str | None = None) -> CreateResult:
    """Create a deployment (and its first revision when the source is complete)."""
    request = {"name": name, "source": source, "source_config": source_config,
               "source_revision_config": source_revision_config, "secrets": secrets}
    if idempotency_key:
        replay = _idempotent_replay(workspace, idempotency_key, _fingerprint(request))
        if replay:
            return CreateResult(replay, created=False)
    get_runner().require(source)
    _resource_spec_check(source_config.get("resource_spec"), source_config.get("deployment_type"))
    secrets = _secrets_clean(secrets or [])
    config = _revision_config(source, {}, source_revision_config)
    if source == Deployment.Source.GITHUB:
        repo_url = source_config.get("repo_url")
        if not repo_url:
            raise BadRequest("source_config.repo_url is required for a github deployment.")
        sources.check_repo_url(repo_url)
    try:
        with transaction.atomic():
            deployment = _deployment_insert(workspace, name, source, source_config, secrets,
                                            idempotency_key, _fingerprint(request))
            if _source_complete(deployment, config):
                _revision_create(deployment, config)
    except IntegrityError:
        if idempotency_key:
            replay = _idempotent_replay(workspace, idempotency_key, _fingerprint(request))
            if replay:
                return CreateResult(replay, created=False)
        raise Conflict(f"A deployment named {name!r} already exists in this workspace.") from None
    return CreateResult(deployment, created=True)


def _idempotent_replay(workspace: Workspace, key: str, fingerprint: str) -> Deployment | None:
    existing = Deployment.objects.filter(workspace=workspace, idempotency_key=key).first()
    if existing is None:
        return None
    if existing.idempotency_fingerprint != fingerprint:
        raise Conflict("This Idempotency-Key was already used with a different request body.")
    return existing


def _deployment_insert(workspace: Workspace, name: str, source: str, source_config: dict, secrets: list[dict],
                       idempotency_key: str | None, fingerprint: str) -> Deployment:
    stored_config = {k: v for k, v in source_config.items() if k != "custom_url" and v is not None}
    deployment = Deployment(workspace=workspace, name=name, source=source, source_config=stored_config,
                            deployment_type=source_config.get("deployment_type"),
                            idempotency_key=idempotency_key or None, idempotency_fingerprint=fingerprint)
    _secrets_set(deployment, secrets)
    # The real service traces a deployment into a project of the same name, in its own workspace.
    deployment.tracing_project_id = project_get_or_create(workspace=workspace, name=name).id
    key, raw_key = api_key_create(workspaces=[workspace], permissions=["tracing:write"],
                                  name=_tracing_key_name(name))
    deployment.tracing_api_key, deployment.tracing_api_key_secret = key, raw_key
    deployment.save()
    return deployment


def _tracing_key_name(name: str) -> str:
    """The name of a deployment's tracing key, within ApiKey.name's 128 characters (a deployment's name may use all
    128 itself): the deployment's name is shortened, with an ellipsis, when the whole would not fit."""
    whole = f"deployment {name} (tracing)"
    if len(whole) <= API_KEY_NAME_LENGTH:
        return whole
    room = API_KEY_NAME_LENGTH - len("deployment … (tracing)")
    return f"deployment {name[:room]}… (tracing)"


def _revision_config(source: str, base: dict, changes: dict) -> dict:
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


def _source_complete(deployment: Deployment, config: dict) -> bool:
    if deployment.source == Deployment.Source.INTERNAL_SOURCE:
        return bool(config.get("source_tarball_path"))
    return True


def _resource_spec_check(spec: dict | None, deployment_type: str | None) -> None:
    """Refuse (422) a spec that asks a dev deployment for more than one replica (its ranges were checked by the
    serializer; the type is known here, on a PATCH too)."""
    errors = resources.deployment_type_errors(spec or {}, deployment_type)
    if errors:
        raise RequestValidationError([validation_item(["body", "source_config", "resource_spec", e.field], e.msg,
                                                      e.type) for e in errors])


def _revision_create(deployment: Deployment, config: dict, *, resource_spec: dict | None = None,
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


def deployment_update(*, deployment: Deployment, data: dict) -> Deployment:
    """Apply a PATCH; any non-null revision field, resource_spec or non-empty secrets make a new revision."""
    _require_not_deleting(deployment)
    _check_immutable(deployment, data)
    source_config = data.get("source_config") or {}
    revision_changes = _non_null(data.get("source_revision_config"))
    secrets = data.get("secrets") or None
    resource_spec = source_config.get("resource_spec")
    _resource_spec_check(resource_spec, deployment.deployment_type)
    needs_revision = bool(revision_changes) or resource_spec is not None or secrets is not None
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(id=deployment.id)
        for key in MUTABLE_SOURCE_CONFIG:
            if source_config.get(key) is not None:
                deployment.source_config = {**deployment.source_config, key: source_config[key]}
        if secrets is not None:
            _secrets_set(deployment, _secrets_clean(secrets))
        deployment.save()
        if needs_revision:
            _revision_next(deployment, revision_changes, resource_spec=resource_spec,
                           tracked_packages=data.get("tracked_packages"))
    deployment.refresh_from_db()
    return deployment


def revision_create(*, deployment: Deployment, data: dict) -> Revision:
    """Make a new revision, always: the latest revision's source with the non-null `source_revision_config` fields.

    The revision a PATCH with only `source_revision_config` would make, even when nothing changed. Secrets and
    source_config are the deployment's: a PATCH changes them (and makes a revision), so they are refused here.
    """
    for field in ("secrets", "source_config"):
        if data.get(field) is not None:
            raise BadRequest(f"{field} cannot be set on a revision: PATCH /v2/deployments/{deployment.id} changes "
                             "it and makes a revision.")
    _require_not_deleting(deployment)
    _check_immutable(deployment, data)
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(id=deployment.id)
        return _revision_next(deployment, _non_null(data.get("source_revision_config")),
                              tracked_packages=data.get("tracked_packages"))


def _revision_next(deployment: Deployment, changes: dict, *, resource_spec: dict | None = None,
                   tracked_packages: list | None = None) -> Revision:
    """The revision a PATCH or a POST …/revisions makes: the latest config with `changes`, checked (in the caller's
    transaction, the deployment locked)."""
    get_runner().require(deployment.source)
    config = _revision_config(deployment.source, _latest_config(deployment), changes)
    if not _source_complete(deployment, config):
        raise BadRequest("source_tarball_path is required: upload the source with "
                         f"POST /v2/deployments/{deployment.id}/upload-url first.")
    return _revision_create(deployment, config, resource_spec=resource_spec, tracked_packages=tracked_packages)


def _non_null(values: dict | None) -> dict:
    return {k: v for k, v in (values or {}).items() if v is not None}


def _require_not_deleting(deployment: Deployment) -> None:
    if deployment.status == Deployment.Status.AWAITING_DELETE:
        raise Conflict(f"Deployment ID {deployment.id} is being deleted.")


def _check_immutable(deployment: Deployment, data: dict) -> None:
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
    _require_not_deleting(deployment)
    get_runner().require(deployment.source)
    config = {field: getattr(revision, field) for field in REVISION_FIELDS}
    with transaction.atomic():
        _revision_create(deployment, config, resource_spec=revision.resource_spec,
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


def deployment_database_ensure(*, deployment: Deployment) -> databases.DeploymentDatabase:
    """Create the deployment's database if it has none yet, record it, and leave AWAITING_DATABASE.

    Called before any revision of the deployment starts; a second call finds the database and changes nothing. When
    the active revision of an older version of this service served from a SQLite file of its own, that file becomes
    the deployment's database (on SQLite), so an upgrade loses nothing.

    Raises databases.DatabaseError with the reason (nothing is recorded then, and a retry starts over).
    """
    with transaction.atomic():
        locked = Deployment.objects.select_for_update().get(id=deployment.id)
        password = locked.database_password or random.token_urlsafe(32)
        active = locked.active_revision
        adopt = get_runner().legacy_database(active) if active and not locked.database_name else None
        database = databases.ensure(deployment_id=locked.id, password=password, adopt=adopt)
        locked.database_name, locked.database_role = database.name, database.role
        locked.database_password = database.password
        if locked.status == Deployment.Status.AWAITING_DATABASE:
            locked.status = Deployment.Status.READY
        locked.save(update_fields=["database_name", "database_role", "database_password", "status", "updated_at"])
    deployment.database_name, deployment.database_role = locked.database_name, locked.database_role
    deployment.database_password, deployment.status = locked.database_password, locked.status
    return database


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


def deployment_delete(*, deployment: Deployment, delete_tracing_project: bool = False,
                      force: bool = False) -> None:
    """Stop serving at once (the proxy answers 404), then let a worker stop processes and remove everything.

    `delete_tracing_project` has the teardown delete the deployment's tracing project and its runs too. `force`
    runs the teardown at once, in this process, on a deployment already being deleted (and only on one).
    """
    if force:
        _deployment_delete_forced(deployment, delete_tracing_project)
        return
    with transaction.atomic():
        deployment = Deployment.objects.select_for_update().get(id=deployment.id)
        if deployment.status == Deployment.Status.AWAITING_DELETE:
            return
        deployment.status = Deployment.Status.AWAITING_DELETE
        deployment.save(update_fields=["status", "updated_at"])
        for revision in deployment.revisions.exclude(status__in=states.TERMINAL):
            revision_transition(revision=revision, to=RevisionStatus.SKIPPED, message="The deployment is deleted.")
        job_enqueue(kind="deployments.teardown", payload={"deployment_id": str(deployment.id),
                                                          "delete_tracing_project": delete_tracing_project})


@dataclass
class BulkDeleteResult:
    deleted: list[uuid.UUID]
    errors: list[dict]  # {"deployment_id", "detail"}


def deployment_delete_many(*, workspace: Workspace, deployment_ids: list[uuid.UUID]) -> BulkDeleteResult:
    """Delete each deployment of `workspace` named (once each, in order); the ones not found are reported."""
    result = BulkDeleteResult(deleted=[], errors=[])
    for deployment_id in dict.fromkeys(deployment_ids):
        try:
            deployment = selectors.deployment_get(workspace=workspace, deployment_id=deployment_id)
        except NotFound as exc:
            result.errors.append({"deployment_id": deployment_id, "detail": exc.detail})
            continue
        deployment_delete(deployment=deployment)
        result.deleted.append(deployment_id)
    return result


def _deployment_delete_forced(deployment: Deployment, delete_tracing_project: bool) -> None:
    if deployment.status != Deployment.Status.AWAITING_DELETE:
        raise BadRequest(f"Deployment ID {deployment.id} is not being deleted: force only applies to a deployment "
                         "already deleted (status AWAITING_DELETE). Delete it without force first.")
    # The DELETE that started the deletion may have asked for the tracing project to go: its queued job will
    # find nothing left to do after this teardown, so this one honours that request too.
    wanted = delete_tracing_project or selectors.teardown_deletes_tracing_project(deployment_id=deployment.id)
    try:
        deployment_teardown(deployment_id=deployment.id, delete_tracing_project=wanted)
    except databases.DatabaseError as exc:
        raise Conflict(f"Deployment ID {deployment.id} cannot be removed now: {exc}. Try again shortly.") from None


def deployment_teardown(*, deployment_id: uuid.UUID | str, delete_tracing_project: bool = False) -> None:
    """Stop every process of a deleted deployment and remove its files and rows (and its tracing project if asked).

    The one teardown: the worker's job runs it, and so does a forced DELETE. Running it twice is harmless.

    Raises databases.DatabaseInUse while a process still uses the deployment's database (a worker that has not
    stopped it yet): dropping it then would cut that process off mid-write, so nothing more is removed and the caller
    comes back later.
    """
    deployment = Deployment.objects.filter(id=deployment_id, status=Deployment.Status.AWAITING_DELETE).first()
    if deployment is None:
        return
    runner = get_runner()
    for revision in deployment.revisions.all():
        runner.stop(revision)
        runner.discard(revision)
    databases.drop(deployment_id=deployment.id)
    uploads.uploads_remove(deployment=deployment)
    deployment_purge(deployment=deployment)
    # After the processes stopped and the tracing key was revoked: no trace can bring the project back.
    if delete_tracing_project and deployment.tracing_project_id:
        project_delete(workspace=deployment.workspace, project_id=deployment.tracing_project_id)


def deployment_purge(*, deployment: Deployment) -> None:
    """Remove a deleted deployment's rows and revoke its tracing key (the tracing project stays)."""
    with transaction.atomic():
        # Locked first: a forced DELETE and the worker's teardown may purge the same deployment at once.
        if not Deployment.objects.select_for_update().filter(id=deployment.id).exists():
            return
        if deployment.tracing_api_key:
            api_key_revoke(api_key=deployment.tracing_api_key)
        Deployment.objects.filter(id=deployment.id).update(latest_revision=None, active_revision=None)
        deployment.delete()


def log_append(*, revision: Revision, type: str, lines: list[str], level: str = RevisionLog.Level.INFO) -> None:
    now = timezone.now()
    RevisionLog.objects.bulk_create(
        [RevisionLog(revision_id=revision.id, type=type, level=level, message=line, timestamp=now) for line in lines]
    )


def log_append_batch(*, revision_id: uuid.UUID, type: str, entries: list[tuple[str, str]]) -> None:
    """Append (level, message) pairs, e.g. a subprocess's output."""
    now = timezone.now()
    RevisionLog.objects.bulk_create(
        [RevisionLog(revision_id=revision_id, type=type, level=level, message=message, timestamp=now)
         for level, message in entries]
    )


def revision_log_sink(*, revision_id: uuid.UUID, type: str) -> LineSink:
    """A sink for a revision's build or deploy log that drops what it cannot write instead of raising.

    Steps write through it, and so does the thread copying a server's output, which must never die:
    the revision may have been deleted with its deployment meanwhile, or the database be briefly away.
    """
    def write(batch: list[tuple[str, str]]) -> None:
        try:
            log_append_batch(revision_id=revision_id, type=type, entries=batch)
        except Exception as exc:
            log.info("dropped %d %s log lines of revision %s (%s)", len(batch), type, revision_id,
                     exc.__class__.__name__)

    return LineSink(write)


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

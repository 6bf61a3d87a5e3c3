"""Writes for deployments: creation (with its first revision), patches, secrets, the deployment's database, and
deletion with its teardown."""

from __future__ import annotations

import hashlib
import json
import re
import secrets as random
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from accounts.models import ApiKey, Workspace
from accounts.services import api_key_create, api_key_revoke
from core.exceptions import BadRequest, Conflict, NotFound
from core.services import job_enqueue
from deployments import databases, selectors, sources, states, uploads
from deployments.models import Deployment
from deployments.services.revision_records import (
    MUTABLE_SOURCE_CONFIG,
    get_runner,
    immutable_fields_check,
    non_null,
    require_not_deleting,
    resource_spec_check,
    revision_config_merged,
    revision_insert,
    revision_next,
    revision_transition,
    source_complete,
)
from deployments.states import RevisionStatus
from tracing.services import project_delete, project_get_or_create

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
    resource_spec_check(source_config.get("resource_spec"), source_config.get("deployment_type"))
    secrets = _secrets_clean(secrets or [])
    config = revision_config_merged(source, {}, source_revision_config)
    if source == Deployment.Source.GITHUB:
        repo_url = source_config.get("repo_url")
        if not repo_url:
            raise BadRequest("source_config.repo_url is required for a github deployment.")
        sources.check_repo_url(repo_url)
    try:
        with transaction.atomic():
            deployment = _deployment_insert(workspace, name, source, source_config, secrets,
                                            idempotency_key, _fingerprint(request))
            if source_complete(deployment, config):
                revision_insert(deployment, config)
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


def deployment_update(*, deployment: Deployment, data: dict) -> Deployment:
    """Apply a PATCH; any non-null revision field, resource_spec or non-empty secrets make a new revision."""
    require_not_deleting(deployment)
    immutable_fields_check(deployment, data)
    source_config = data.get("source_config") or {}
    revision_changes = non_null(data.get("source_revision_config"))
    secrets = data.get("secrets") or None
    resource_spec = source_config.get("resource_spec")
    resource_spec_check(resource_spec, deployment.deployment_type)
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
            revision_next(deployment, revision_changes, resource_spec=resource_spec,
                           tracked_packages=data.get("tracked_packages"))
    deployment.refresh_from_db()
    return deployment


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

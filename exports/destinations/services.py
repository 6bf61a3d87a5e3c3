"""Writes for bulk export destinations: create, rotate credentials, validate, delete, purge.

Network I/O (the test write) always runs outside database transactions; the short
transactions afterwards swap pointers with optimistic concurrency. Every test write counts
against the workspace's `destination-validation` rate first, whoever asks for it (the API or
the admin); a request refused before it (a malformed body, a missing destination) does not.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import Workspace
from core.egress import EgressDenied
from core.exceptions import BadRequest, Conflict, NotFound, ServiceError, TooManyRequests
from core.throttling import throttle_hit, workspace_ident
from exports import s3_clients
from exports.destinations.models import CredentialVersion, Destination
from exports.destinations.selectors import credential_binding, credential_version_credentials
from exports.storage_errors import NotS3Endpoint, classify

log = logging.getLogger("exports.destinations")

FAILED = "Failed to validate S3 destination: "
VALIDATION_SCOPE = "destination-validation"
_STORAGE_ERRORS = (EgressDenied, ClientError, BotoCoreError, NotS3Endpoint, RecursionError, OSError)


def destination_create(*, workspace: Workspace, display_name: str, config: dict,
                       credentials: dict | None, destination_type: str = Destination.Type.S3) -> Destination:
    """Validate the destination with a test write, then store it with its first credential version."""
    creds = s3_clients.S3Credentials.from_dict(credentials) if credentials else None
    _test_write_count(workspace=workspace)
    _validate(config=config, credentials=creds, workspace=workspace)
    destination_id, version_id = uuid.uuid4(), uuid.uuid4()
    now = timezone.now()
    with transaction.atomic():
        # The destination points at its first version before that row exists: both foreign keys are
        # checked at commit (Django creates them DEFERRABLE INITIALLY DEFERRED), which saves an UPDATE.
        destination = Destination.objects.create(
            id=destination_id, workspace=workspace, destination_type=destination_type, display_name=display_name,
            config=config, credentials_keys=creds.keys() if creds else [], last_validated_at=now,
            credentials_revision=1 if creds else 0, current_credentials_id=version_id if creds else None,
        )
        if creds:
            _version_create(destination=destination, version_id=version_id, number=1, credentials=creds)
    log.info("Destination %s created in workspace %s", destination.id, workspace.id)
    return destination


def destination_credentials_update(*, destination: Destination, credentials: dict) -> Destination:
    """Replace the credentials new export runs use, after a test write with the existing configuration.

    Export runs already going keep the version they pinned. Two concurrent updates cannot both win:
    the loser gets 409 and nothing of it is stored.
    """
    if destination.deleted_at is not None:
        raise NotFound("Destination not found")
    creds = s3_clients.S3Credentials.from_dict(credentials)
    revision = destination.credentials_revision
    _test_write_count(workspace=destination.workspace)
    _validate(config=destination.config, credentials=creds, workspace=destination.workspace)
    now = timezone.now()
    try:
        with transaction.atomic():
            number = (destination.credential_versions.aggregate(n=Max("number"))["n"] or 0) + 1
            version = _version_create(destination=destination, version_id=uuid.uuid4(), number=number,
                                      credentials=creds)
            swapped = Destination.objects.filter(
                id=destination.id, credentials_revision=revision, deleted_at__isnull=True
            ).update(current_credentials=version, credentials_keys=creds.keys(), credentials_revision=revision + 1,
                     last_validated_at=now, validation_failed_at=None, validation_error="", updated_at=now)
            if swapped != 1:
                raise IntegrityError("credentials changed concurrently")
            CredentialVersion.objects.filter(destination=destination, retired_at__isnull=True).exclude(
                id=version.id).update(retired_at=now)
    except IntegrityError:
        raise Conflict("The destination's credentials were changed by another request at the same time; "
                       "nothing was stored. Retry the update.") from None
    destination.refresh_from_db()
    log.info("Destination %s credentials rotated to version %s", destination.id, number)
    return destination


def destination_validate(*, destination: Destination) -> s3_clients.WriteCheck:
    """Run the test write again with the destination's current credentials.

    A failure is recorded on the destination (the admin index counts it) until a test write succeeds.
    """
    _test_write_count(workspace=destination.workspace)
    try:
        creds = credential_version_credentials(version=destination.current_credentials_id)
        check = _validate(config=destination.config, credentials=creds, workspace=destination.workspace)
    except ServiceError as exc:
        Destination.objects.filter(id=destination.id).update(validation_failed_at=timezone.now(),
                                                             validation_error=exc.detail)
        raise
    Destination.objects.filter(id=destination.id).update(last_validated_at=timezone.now(),
                                                         validation_failed_at=None, validation_error="")
    return check


def destination_delete(*, destination: Destination) -> None:
    """Delete a destination (soft: exports that used it keep their history); 409 while one is unfinished."""
    # Asked through the relation from bulk exports (exports.bulk_exports imports this app, not the reverse).
    if destination.bulk_exports.unfinished().exists():
        raise Conflict("This destination is used by an export that has not finished; cancel it or wait for it "
                       "to finish before deleting the destination.")
    now = timezone.now()
    with transaction.atomic():
        Destination.objects.filter(id=destination.id).update(deleted_at=now, updated_at=now)
        CredentialVersion.objects.filter(destination_id=destination.id, retired_at__isnull=True).update(
            retired_at=now)
    log.info("Destination %s deleted", destination.id)


def credential_versions_purge(*, grace_seconds: int | None = None) -> int:
    """Erase the secrets of retired versions that no unfinished export run pins (after a grace period)."""
    grace = settings.EXPORTS_CREDENTIAL_PURGE_GRACE_SECONDS if grace_seconds is None else grace_seconds
    cutoff = timezone.now() - timedelta(seconds=grace)
    candidates = list(CredentialVersion.objects.filter(retired_at__lte=cutoff, purged_at__isnull=True)
                      .only("id")[:1000])
    # Export runs pin versions (exports.bulk_exports): asked through the relation, one small query per retired
    # version, of which a pass sees few.
    pinned = {version.id for version in candidates if version.export_runs.unfinished().exists()}
    purgeable = [version.id for version in candidates if version.id not in pinned]
    purged = CredentialVersion.objects.filter(id__in=purgeable, purged_at__isnull=True).update(
        secret=None, purged_at=timezone.now())
    if purged:
        log.info("Purged %s retired credential version(s); %s still pinned", purged, len(pinned))
    return purged


def _test_write_count(*, workspace: Workspace) -> None:
    """Count one test write against the workspace's `destination-validation` rate; refused, nothing is sent."""
    wait = throttle_hit(scope=VALIDATION_SCOPE, ident=workspace_ident(workspace.id))
    if wait is not None:
        seconds = max(1, int(wait + 0.999))
        raise TooManyRequests(f"Too many destination validations in this workspace: try again in {seconds} s.",
                              retry_after_seconds=seconds)


def _version_create(*, destination: Destination, version_id: uuid.UUID, number: int,
                    credentials: s3_clients.S3Credentials) -> CredentialVersion:
    payload = {"binding": credential_binding(destination.workspace_id, destination.id, version_id),
               "credentials": credentials.as_dict()}
    return CredentialVersion.objects.create(id=version_id, destination=destination, number=number,
                                            credentials_keys=credentials.keys(), secret=json.dumps(payload))


def _validate(*, config: dict, credentials: s3_clients.S3Credentials | None,
              workspace: Workspace) -> s3_clients.WriteCheck:
    try:
        client = s3_clients.s3_client(config, credentials, max_attempts=2)
    except EgressDenied as exc:
        log.info("Destination check in workspace %s refused by the egress guard", workspace.id)
        raise BadRequest(FAILED + exc.detail) from None
    try:
        check = s3_clients.write_test_file(client)
    except _STORAGE_ERRORS as exc:
        failure = classify(exc)
        # The class and category only: the endpoint's own words may carry anything.
        log.info("Destination check in workspace %s failed: %s (%s)", workspace.id, failure.category,
                 type(exc).__name__)
        raise BadRequest(FAILED + failure.message) from None
    finally:
        client.close()
    if not check.deleted:
        log.info("Destination check file left in place (no delete permission) in workspace %s", workspace.id)
    return check

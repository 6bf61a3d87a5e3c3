"""Reads for bulk export destinations and their credential versions."""

from __future__ import annotations

import json
import uuid

from django.db.models import QuerySet

from accounts.models import Workspace
from core.exceptions import BadRequest, NotFound
from core.fields import UndecryptableValue
from exports.destinations.models import CredentialVersion, Destination
from exports.s3_clients import S3Credentials

UNREADABLE = ("The stored credentials of this destination cannot be read (the encryption key that wrote them is "
              "not configured, or the data was altered): set new credentials with PATCH.")


class CredentialsUnreadable(BadRequest, detail=UNREADABLE): ...


def destination_list(*, workspace: Workspace) -> QuerySet[Destination]:
    """The workspace's destinations, oldest first (never another workspace's, never deleted ones)."""
    return Destination.objects.filter(workspace=workspace, deleted_at__isnull=True).order_by("created_at", "id")


def destination_list_failing_validation() -> QuerySet[Destination]:
    """Live destinations (every workspace) whose last test write failed: exports to them will fail too."""
    return Destination.objects.filter(deleted_at__isnull=True, validation_failed_at__isnull=False)


def destination_get(*, workspace: Workspace, destination_id: uuid.UUID) -> Destination:
    """One destination of the workspace; a missing, deleted or foreign one is the same 404."""
    destination = destination_list(workspace=workspace).filter(id=destination_id).first()
    if destination is None:
        raise NotFound("Destination not found")
    return destination


def credential_version_current(*, destination: Destination) -> CredentialVersion | None:
    """The version new export runs must pin (None: environment-based credentials).

    The secret is not loaded (nor decrypted) here; `credential_version_credentials` does that.
    """
    if destination.current_credentials_id is None:
        return None
    return CredentialVersion.objects.defer("secret").get(id=destination.current_credentials_id)


def credential_version_credentials(*, version: CredentialVersion | uuid.UUID | None) -> S3Credentials | None:
    """Decrypt a version's credentials; fail closed (CredentialsUnreadable) on any doubt.

    None in, None out: a destination without stored credentials uses the environment's.
    """
    if version is None:
        return None
    version_id = version.id if isinstance(version, CredentialVersion) else version
    try:
        row = (CredentialVersion.objects.select_related("destination")
               .only("id", "secret", "purged_at", "destination__id", "destination__workspace_id")
               .get(id=version_id))
    except UndecryptableValue:
        raise CredentialsUnreadable() from None
    if row.purged_at is not None or not row.secret:
        raise CredentialsUnreadable("These credentials were purged after a rotation; set new credentials with PATCH.")
    try:
        payload = json.loads(row.secret)
    except ValueError:
        raise CredentialsUnreadable() from None
    if payload.get("binding") != credential_binding(row.destination.workspace_id, row.destination.id, row.id):
        # A ciphertext moved here from another row: never use it.
        raise CredentialsUnreadable()
    return S3Credentials.from_dict(payload["credentials"])


def credential_binding(workspace_id: uuid.UUID, destination_id: uuid.UUID, version_id: uuid.UUID) -> dict:
    return {"tenant_id": str(workspace_id), "destination_id": str(destination_id), "version_id": str(version_id)}

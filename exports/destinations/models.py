"""Bulk export destinations (S3 or S3-compatible buckets) and the versions of their credentials.

Bulk exports (exports.bulk_exports) point at a destination and their export runs at the credential
version they pinned; that app imports this one, never the other way round. Two rules here depend on
them and ask through the reverse relations, whose querysets say what "unfinished" means:
`destination.bulk_exports.unfinished()` and `credential_version.export_runs.unfinished()`.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.fields import EncryptedTextField
from core.models import BaseModel


class Destination(BaseModel):
    """A named object-storage target of bulk exports (an S3 or S3-compatible bucket).

    `config` holds the validated, non-secret settings; the secrets live in immutable
    CredentialVersion rows and `current_credentials` points at the one new export runs use.
    `credentials_revision` counts swaps of that pointer (optimistic concurrency for PATCH).
    """

    class Type(models.TextChoices):
        S3 = "s3"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="export_destinations")
    destination_type = models.CharField(max_length=16, choices=Type.choices, default=Type.S3)
    display_name = models.CharField(max_length=255)
    config = models.JSONField(default=dict)
    credentials_keys = models.JSONField(default=list, blank=True)
    current_credentials = models.ForeignKey(
        "exports.CredentialVersion", null=True, blank=True, on_delete=models.RESTRICT, related_name="+",
        help_text="Empty: environment-based credentials (self-hosted only).",
    )
    credentials_revision = models.PositiveIntegerField(default=0)
    last_validated_at = models.DateTimeField(null=True, blank=True)
    # Set when a re-validation (destination_validate) fails, cleared by the next success: the admin index
    # lists such destinations. The message is the service's own (classified, never the endpoint's words).
    validation_failed_at = models.DateTimeField(null=True, blank=True)
    validation_error = models.TextField(blank=True, default="")
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "deleted_at", "created_at"], name="exports_dest_ws_idx")]

    def __str__(self) -> str:
        return self.display_name

    @property
    def bucket_name(self) -> str:
        return self.config.get("bucket_name", "")


class CredentialVersion(models.Model):
    """One immutable set of destination credentials; export runs pin the version they start with.

    `secret` is encrypted JSON that also names the tenant, destination and version it belongs
    to, so a ciphertext copied into another row does not decrypt into usable credentials there.
    Purging (after retirement, once no unfinished export run pins the version) empties `secret`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="credential_versions")
    number = models.PositiveIntegerField()
    credentials_keys = models.JSONField(default=list)
    secret = EncryptedTextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    retired_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["destination", "number"]
        constraints = [
            models.UniqueConstraint(fields=["destination", "number"], name="exports_credver_unique_number"),
            models.CheckConstraint(condition=Q(purged_at__isnull=True) | Q(secret__isnull=True),
                                   name="exports_credver_purged_has_no_secret"),
        ]

    def __str__(self) -> str:
        return f"credentials v{self.number} of destination {self.destination_id}"

    def save(self, *args, **kwargs):
        # Export runs pin versions by id: a version's secret must never change under them.
        if not self._state.adding:
            raise ValueError("Credential versions are immutable: create a new version instead.")
        super().save(*args, **kwargs)

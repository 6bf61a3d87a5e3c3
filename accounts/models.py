from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from core.models import BaseModel


class Workspace(BaseModel):
    """A tenant: its UUID is the `X-Tenant-Id` value."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=128, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKey(BaseModel):
    """An API key. Only its prefix and a SHA-512 hash of the whole key are stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=128, blank=True)
    prefix = models.CharField(max_length=32, unique=True, editable=False)
    hashed_key = models.CharField(max_length=128, editable=False)
    workspaces = models.ManyToManyField(Workspace, related_name="api_keys")
    # Where a call without X-Tenant-Id goes: the key's only workspace when it was created. A workspace the key creates
    # later (POST /api/v1/workspaces) is added to `workspaces` and changes nothing here.
    home_workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    permissions = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name or 'key'} ({self.prefix}…)"

    @property
    def is_usable(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

"""OAuth providers a workspace registers, the flows that ask users for consent, and the tokens they yield."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.db import models
from django.utils import timezone

from core.fields import EncryptedTextField
from core.models import BaseModel


class OAuthProvider(BaseModel):
    """An OAuth 2 authorization server a workspace's agents may obtain user tokens from."""

    class ChallengeMethod(models.TextChoices):
        S256 = "S256"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="oauth_providers")
    # The caller's own name for the provider ("github"); unique per workspace, used in URLs.
    provider_id = models.CharField(max_length=64)
    name = models.CharField(max_length=255)
    client_id = models.CharField(max_length=512)
    # Write-only: never serialized, never shown in the admin. Empty means a public (PKCE-only) client.
    client_secret = EncryptedTextField(blank=True)
    auth_url = models.URLField(max_length=2048)
    token_url = models.URLField(max_length=2048)
    uses_pkce = models.BooleanField(default=False)
    code_challenge_method = models.CharField(max_length=8, choices=ChallengeMethod.choices,
                                             default=ChallengeMethod.S256)

    class Meta:
        verbose_name = "OAuth provider"
        ordering = ["provider_id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "provider_id"], name="agentauth_provider_unique_per_ws"),
        ]

    def __str__(self) -> str:
        return f"{self.provider_id} ({self.name})"


class OAuthToken(BaseModel):
    """The tokens one user granted through one provider, for one agent (or for every agent when blank)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="oauth_tokens")
    provider = models.ForeignKey(OAuthProvider, on_delete=models.CASCADE, related_name="tokens")
    user_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, blank=True)
    access_token = EncryptedTextField()
    refresh_token = EncryptedTextField(blank=True)
    token_type = models.CharField(max_length=64, blank=True)
    scopes = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    # While set and in the future, one request is refreshing this token; others wait for it.
    refresh_lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "OAuth token"
        constraints = [
            models.UniqueConstraint(fields=["provider", "user_id", "agent_id"], name="agentauth_token_unique_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.provider.provider_id} token for {self.user_id}"

    def is_expired(self, *, skew_seconds: int = 30) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at <= timezone.now() + timedelta(seconds=skew_seconds)

    def covers(self, scopes: list[str]) -> bool:
        return set(scopes) <= set(self.scopes)


class AuthFlow(BaseModel):
    """One request for a user's consent: its id is the `auth_id`, its state is single-use and browser-bound."""

    class Status(models.TextChoices):
        PENDING = "pending"
        EXCHANGING = "exchanging"
        COMPLETED = "completed"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey("accounts.Workspace", on_delete=models.CASCADE, related_name="auth_flows")
    provider = models.ForeignKey(OAuthProvider, on_delete=models.CASCADE, related_name="flows")
    user_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, blank=True)
    scopes = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.CharField(max_length=64, blank=True)
    expires_at = models.DateTimeField()
    # Set when a browser opens the start URL: SHA-256 of the cookie it received, and of the state it was sent with.
    browser_hash = models.CharField(max_length=64, blank=True)
    state_hash = models.CharField(max_length=64, null=True, blank=True, unique=True)
    code_verifier = EncryptedTextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    state_used_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    token = models.ForeignKey(OAuthToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        verbose_name = "OAuth flow"

    def __str__(self) -> str:
        return f"flow {self.id} ({self.status})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

"""Deployments, their revisions and the revisions' build and deploy logs."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey, Workspace
from core.fields import EncryptedCharField, EncryptedTextField
from core.models import BaseModel
from deployments.states import RevisionStatus


class Deployment(BaseModel):
    """An agent server: a name, where its code comes from, secrets, and the revision being served."""

    class Status(models.TextChoices):
        AWAITING_DATABASE = "AWAITING_DATABASE"
        READY = "READY"
        UNUSED = "UNUSED"
        AWAITING_DELETE = "AWAITING_DELETE"
        UNKNOWN = "UNKNOWN"

    class Source(models.TextChoices):
        GITHUB = "github"
        EXTERNAL_DOCKER = "external_docker"
        INTERNAL_DOCKER = "internal_docker"
        INTERNAL_SOURCE = "internal_source"
        INTERNAL_TEMPLATE = "internal_template"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="deployments",
                                  db_column="tenant_id", editable=False)
    name = models.CharField(max_length=128)
    source = models.CharField(max_length=32, choices=Source.choices)
    deployment_type = models.CharField(max_length=32, null=True, blank=True)
    # The request's source_config as stored (custom_url is derived, never stored).
    source_config = models.JSONField(default=dict, blank=True)
    # [{"name", "value"}], encrypted; the names are kept apart so reads never decrypt.
    secrets = EncryptedTextField(default="[]")
    secret_names = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.AWAITING_DATABASE)
    latest_revision = models.ForeignKey("Revision", null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+")
    active_revision = models.ForeignKey("Revision", null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+")
    tracing_project_id = models.UUIDField(null=True, blank=True)
    # A key limited to tracing:write in this workspace: the served graphs trace with it.
    tracing_api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tracing_api_key_secret = EncryptedCharField(max_length=255, blank=True, default="")
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    idempotency_fingerprint = models.CharField(max_length=64, blank=True, default="")
    # The deployment's own database (deployments/databases.py), shared by all its revisions: empty until the first
    # revision is about to start. The name is a PostgreSQL database or a SQLite file's path; the password is its
    # role's.
    database_name = models.CharField(max_length=1024, blank=True, default="")
    database_role = models.CharField(max_length=63, blank=True, default="")
    database_password = EncryptedCharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="deployment_unique_name"),
            models.UniqueConstraint(fields=["workspace", "idempotency_key"], condition=Q(idempotency_key__isnull=False),
                                    name="deployment_unique_idempotency_key"),
        ]

    def __str__(self) -> str:
        return self.name


class Revision(BaseModel):
    """One build of a deployment's source, and the process serving it once deployed."""

    Status = RevisionStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=32, choices=RevisionStatus.choices, default=RevisionStatus.CREATING)
    source = models.CharField(max_length=32, choices=Deployment.Source.choices)
    repo_url = models.TextField(null=True, blank=True)
    repo_ref = models.CharField(max_length=255, null=True, blank=True)
    repo_commit_sha = models.CharField(max_length=64, null=True, blank=True)
    langgraph_config_path = models.CharField(max_length=1024, null=True, blank=True)
    image_uri = models.TextField(null=True, blank=True)
    source_tarball_path = models.CharField(max_length=1024, null=True, blank=True)
    resource_spec = models.JSONField(null=True, blank=True)
    tracked_packages = models.JSONField(default=list, blank=True)
    # The secrets this revision runs with, so restarting it later never picks up newer ones.
    secrets = EncryptedTextField(default="[]")
    status_message = models.TextField(blank=True, default="")
    # Where the local runner serves it: its replicas' processes, one {"port", "pid"} per replica by index, on one host
    # with one token (all empty unless processes were started).
    serving_host = models.CharField(max_length=255, blank=True, default="")
    serving_replicas = models.JSONField(default=list, blank=True)
    serving_token = EncryptedCharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["deployment", "number"], name="revision_unique_number")]

    def __str__(self) -> str:
        # No status: a DEPLOYED revision may have been replaced since, and names outlive statuses (admin titles).
        return f"{self.deployment.name} #{self.number}"

    @property
    def serving_pids(self) -> list[int]:
        """The pids of its replicas' processes, by replica index."""
        return [replica["pid"] for replica in self.serving_replicas if replica]

    @property
    def serving_pid(self) -> int | None:
        """The first replica's pid (None when nothing is served)."""
        return next(iter(self.serving_pids), None)


class RevisionLog(models.Model):
    """One line of a revision's build or deploy output."""

    class Type(models.TextChoices):
        BUILD = "build"
        DEPLOY = "deploy"

    class Level(models.TextChoices):
        DEBUG = "DEBUG"
        INFO = "INFO"
        WARNING = "WARNING"
        ERROR = "ERROR"
        CRITICAL = "CRITICAL"

    id = models.BigAutoField(primary_key=True)
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="logs")
    type = models.CharField(max_length=8, choices=Type.choices)
    timestamp = models.DateTimeField(default=timezone.now)
    level = models.CharField(max_length=8, choices=Level.choices, default=Level.INFO)
    message = models.TextField()

    class Meta:
        indexes = [models.Index(fields=["revision", "type", "id"], name="revision_log_page_idx")]

    def __str__(self) -> str:
        return f"[{self.type}] {self.message[:80]}"

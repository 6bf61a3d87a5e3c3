"""Assistants of the Agent Server API (threads are agentruntime.models.ChatThread, shared with the chat protocol).

An assistant is a served graph plus a configuration, versioned: every change adds an AssistantVersion and the
Assistant row mirrors the version currently in use. Assistants belong to an owner exactly as chat threads do
(a workspace, a user or the shared anonymous owner), so the same caller sees the same objects on both APIs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.models import BaseModel


class Assistant(BaseModel):
    class OwnerKind(models.TextChoices):
        WORKSPACE = "workspace"
        USER = "user"
        ANONYMOUS = "anonymous"

    # The id the API shows. Not the primary key: a graph's system assistant has the same id (uuid5 of the graph
    # id) for every owner, as on the Agent Server, and each owner has a row of its own.
    assistant_id = models.UUIDField()
    owner_kind = models.CharField(max_length=16, choices=OwnerKind.choices)
    workspace = models.ForeignKey(
        "accounts.Workspace", null=True, blank=True, on_delete=models.CASCADE, related_name="assistants"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="assistants"
    )
    graph_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    description = models.TextField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    context = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The version in use (set_latest can go back to an older one).
    version = models.PositiveIntegerField(default=1)
    # A served graph's own assistant, created for every owner on first use; it cannot be deleted.
    is_system = models.BooleanField(default=False)

    class Meta:
        constraints = [
            # One per owner and id; per kind, since NULL owner columns would never collide in one constraint.
            models.UniqueConstraint(fields=["workspace", "assistant_id"], condition=models.Q(owner_kind="workspace"),
                                    name="agentserver_assistant_workspace_id"),
            models.UniqueConstraint(fields=["user", "assistant_id"], condition=models.Q(owner_kind="user"),
                                    name="agentserver_assistant_user_id"),
            models.UniqueConstraint(fields=["assistant_id"], condition=models.Q(owner_kind="anonymous"),
                                    name="agentserver_assistant_anonymous_id"),
            models.CheckConstraint(
                name="agentserver_assistant_owner_consistent",
                condition=(
                    models.Q(owner_kind="workspace", workspace__isnull=False, user__isnull=True)
                    | models.Q(owner_kind="user", workspace__isnull=True, user__isnull=False)
                    | models.Q(owner_kind="anonymous", workspace__isnull=True, user__isnull=True)
                ),
            ),
        ]
        indexes = [models.Index(fields=["owner_kind", "workspace", "user", "graph_id"],
                                name="agentserver_assistant_graph")]

    def __str__(self) -> str:
        return f"{self.name} ({self.assistant_id} v{self.version})"


class AssistantVersion(models.Model):
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    graph_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    description = models.TextField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    context = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assistant", "version"], name="agentserver_version_unique")]

    def __str__(self) -> str:
        return f"{self.assistant.assistant_id} v{self.version}"


class Cron(BaseModel):
    """A schedule that creates a run of `payload` (a run creation's body) at every tick of `schedule`.

    `next_run_date` is the tick to fire next; firing moves it forward in one conditional UPDATE, so that one
    worker only fires each tick, and from the time it fires, so that ticks missed while nothing ran fire once.
    A cron with a `thread` runs on it; one without creates a thread per run (`on_run_completed`: delete or keep it).
    """

    owner_kind = models.CharField(max_length=16, choices=Assistant.OwnerKind.choices)
    workspace = models.ForeignKey(
        "accounts.Workspace", null=True, blank=True, on_delete=models.CASCADE, related_name="crons"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="crons"
    )
    id = models.UUIDField(primary_key=True)
    assistant_id = models.UUIDField()
    # Not a foreign key: chat deletes a thread's rows in written-out statements
    # (agentruntime.services.thread_delete_by_id)
    # and knows nothing of crons. agentserver.services.thread_delete deletes the thread's crons, and a cron whose
    # thread went another way (the chat page) is deleted when it would fire.
    thread_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    schedule = models.CharField(max_length=255)
    timezone = models.CharField(max_length=64, null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    next_run_date = models.DateTimeField(null=True, blank=True)
    on_run_completed = models.CharField(max_length=8, null=True, blank=True)
    enabled = models.BooleanField(default=True)
    payload = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["enabled", "next_run_date"], name="agentserver_cron_due"),
                   models.Index(fields=["owner_kind", "workspace", "user"], name="agentserver_cron_owner")]

    def __str__(self) -> str:
        return f"{self.schedule} ({self.id})"

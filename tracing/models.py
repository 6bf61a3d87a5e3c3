"""The trace store: tracing projects ("sessions" on the wire) and their runs in LangSmith's run format."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Workspace
from core.models import BaseModel


class TracingProject(BaseModel):
    """A tracing project. The LangSmith wire calls it a session: runs name it in `session_name` / `session_id`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tracing_projects")
    name = models.CharField(max_length=255)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="tracing_project_unique_name")]

    def __str__(self) -> str:
        return self.name


class Run(models.Model):
    """One run (a span) with the exportable fields of LangSmith's run data format.

    `id` is the client's run UUID. A run never changes workspace, project, trace or place in the
    tree after it was first stored; later posts and patches only fill in or update its data.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCESS = "success"
        ERROR = "error"

    class RunType(models.TextChoices):
        TOOL = "tool"
        CHAIN = "chain"
        LLM = "llm"
        RETRIEVER = "retriever"
        EMBEDDING = "embedding"
        PROMPT = "prompt"
        PARSER = "parser"

    id = models.UUIDField(primary_key=True, editable=False)
    # No single-column indexes on the two foreign keys: (session, start_time, id) serves every
    # per-project query, and each extra index slows ingestion down.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="runs",
                                  db_column="tenant_id", db_index=False, editable=False)
    session = models.ForeignKey(TracingProject, on_delete=models.CASCADE, related_name="runs",
                                db_index=False, editable=False)
    trace_id = models.UUIDField(db_index=True)
    parent_run_id = models.UUIDField(null=True, blank=True)
    # Ancestors from the root down to the parent, as in LangSmith.
    parent_run_ids = models.JSONField(default=list, blank=True)
    reference_example_id = models.UUIDField(null=True, blank=True)
    name = models.TextField()
    run_type = models.CharField(max_length=16, choices=RunType.choices)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    is_root = models.BooleanField(default=True)
    dotted_order = models.TextField()
    trace_tier = models.CharField(max_length=32, null=True, blank=True)
    inputs = models.JSONField(default=dict, blank=True)
    outputs = models.JSONField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    feedback_stats = models.JSONField(null=True, blank=True)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    prompt_tokens = models.BigIntegerField(null=True, blank=True)
    completion_tokens = models.BigIntegerField(null=True, blank=True)
    total_cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    prompt_cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    completion_cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    first_token_time = models.DateTimeField(null=True, blank=True)
    # Not indexed on purpose: every index costs on ingestion, and retention walks the
    # (session, start_time, id) index instead.
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # Export reads a project's runs in (start_time, id) order over a time range.
            models.Index(fields=["session", "start_time", "id"], name="tracing_run_session_start_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.run_type}, {self.id})"

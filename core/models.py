"""Background jobs and periodic-job leases, shared by every app's workers."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class BaseModel(models.Model):
    created_at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Job(BaseModel):
    """One unit of background work, claimed by `run_worker` under a lease."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    queue = models.CharField(max_length=64, default="default")
    kind = models.CharField(max_length=128)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    run_after = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=128, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["queue", "status", "run_after"], name="core_job_claim_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"


class PeriodicLease(models.Model):
    """When a periodic job next runs, and which worker holds it while it runs."""

    name = models.CharField(max_length=128, primary_key=True)
    next_run_at = models.DateTimeField(default=timezone.now)
    lease_owner = models.CharField(max_length=128, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.name


class HealthProbe(models.Model):
    """One tiny row `/healthz` rewrites: a database that answers reads may still refuse writes (a full disk)."""

    name = models.CharField(max_length=64, primary_key=True)
    written_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name

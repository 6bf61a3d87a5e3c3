"""Writes for the job queue and periodic leases.

Claims are conditional UPDATEs checked by their row count, so they work the same on
SQLite and PostgreSQL; on PostgreSQL, candidates are also picked with SKIP LOCKED so
that concurrent workers do not queue on the same rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.models import HealthProbe, Job, PeriodicLease


def job_enqueue(*, kind: str, payload: dict | None = None, queue: str | None = None,
                run_after: datetime | None = None) -> Job:
    from core.registry import HANDLERS

    handler = HANDLERS.get(kind)
    return Job.objects.create(
        kind=kind,
        payload=payload or {},
        queue=queue or (handler.queue if handler else "default"),
        run_after=run_after or timezone.now(),
    )


def _claimable(now: datetime) -> Q:
    return Q(status=Job.Status.QUEUED, run_after__lte=now) | Q(status=Job.Status.RUNNING, lease_expires_at__lt=now)


def job_claim(*, worker_id: str, queues: list[str] | None, lease_seconds: float) -> Job | None:
    """Claim one due job (or one whose worker's lease expired) for `worker_id`."""
    now = timezone.now()
    candidates = Job.objects.filter(_claimable(now)).order_by("run_after", "created_at")
    if queues:
        candidates = candidates.filter(queue__in=queues)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            candidates = candidates.select_for_update(skip_locked=True)
        for job_id in list(candidates.values_list("id", flat=True)[:10]):
            claimed = Job.objects.filter(_claimable(now), id=job_id).update(
                status=Job.Status.RUNNING,
                lease_owner=worker_id,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                attempts=F("attempts") + 1,
                updated_at=now,
            )
            if claimed == 1:
                return Job.objects.get(id=job_id)
    return None


def job_renew_lease(*, job: Job, worker_id: str, lease_seconds: float) -> bool:
    """Extend the lease; False means another worker has taken the job over."""
    expires = timezone.now() + timedelta(seconds=lease_seconds)
    return Job.objects.filter(id=job.id, lease_owner=worker_id, status=Job.Status.RUNNING).update(
        lease_expires_at=expires
    ) == 1


def job_finish(*, job: Job, worker_id: str, error: str = "") -> bool:
    now = timezone.now()
    status = Job.Status.FAILED if error else Job.Status.DONE
    return Job.objects.filter(id=job.id, lease_owner=worker_id).update(
        status=status, last_error=error[:4000], finished_at=now, lease_expires_at=None, updated_at=now
    ) == 1


def job_requeue(*, job: Job, worker_id: str, delay: float, reason: str = "") -> bool:
    now = timezone.now()
    return Job.objects.filter(id=job.id, lease_owner=worker_id).update(
        status=Job.Status.QUEUED,
        run_after=now + timedelta(seconds=delay),
        last_error=reason[:4000],
        lease_owner="",
        lease_expires_at=None,
        updated_at=now,
    ) == 1


def periodic_claim(*, name: str, worker_id: str, every_seconds: float, lease_seconds: float) -> bool:
    """Take the periodic job `name` if it is due and nobody holds it; moves its next run forward."""
    now = timezone.now()
    try:
        PeriodicLease.objects.get_or_create(name=name, defaults={"next_run_at": now})
    except IntegrityError:
        pass  # another worker created it at the same moment
    free = Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)
    return PeriodicLease.objects.filter(free, name=name, next_run_at__lte=now).update(
        lease_owner=worker_id,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        next_run_at=now + timedelta(seconds=every_seconds),
    ) == 1


def periodic_release(*, name: str, worker_id: str, error: str = "") -> None:
    PeriodicLease.objects.filter(name=name, lease_owner=worker_id).update(
        lease_owner="", lease_expires_at=None, last_finished_at=timezone.now(), last_error=error[:4000]
    )


def health_probe_write() -> None:
    """Commit a one-row write: raises the database's error when it can be read but not written (a full disk)."""
    with transaction.atomic():
        if not HealthProbe.objects.filter(pk="healthz").update(written_at=timezone.now()):
            HealthProbe.objects.get_or_create(pk="healthz")

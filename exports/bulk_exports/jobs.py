"""Background jobs of bulk exports: export runs, schedules and the sweep that keeps export runs moving."""

from __future__ import annotations

from django.conf import settings

from core.registry import job_handler, periodic
from exports.bulk_exports import services


@job_handler(services.EXPORT_RUN_JOB, queue="exports")
def run_export(job, lease) -> None:
    """One export run (a UTC day of an export), resumed from its cursor when a worker took it over."""
    # Imported here: the runner loads pyarrow (about 25 MiB), which only a worker running an export needs, not every
    # web process that registers the job handlers.
    from exports.bulk_exports import runner

    runner.execute(export_run_id=job.payload["run_id"], lease=lease)


@periodic("exports.spawn_scheduled", every_seconds=settings.EXPORT_SCHEDULE_SECONDS)
def spawn_scheduled() -> None:
    """Spawn the child exports of schedules whose windows closed (a few at a time, in order)."""
    services.schedules_spawn()


@periodic("exports.sweep_runs", every_seconds=settings.EXPORT_SWEEP_SECONDS)
def sweep_export_runs() -> None:
    """Hand waiting export runs to workers within the limits, and give running ones without a live job a new one."""
    services.export_runs_sweep()

"""Background jobs of the exports app."""

from __future__ import annotations

from django.conf import settings

from core.registry import job_handler, periodic
from exports import export_services, services


@periodic("exports.purge_credentials", every_seconds=600)
def purge_credentials() -> None:
    """Erase retired credential versions once no unfinished export run pins them."""
    services.credential_versions_purge()


@job_handler(export_services.RUN_JOB, queue="exports")
def run_export(job, lease) -> None:
    """One export run (a UTC day of an export), resumed from its cursor when a worker took it over."""
    # Imported here: the runner loads pyarrow (about 25 MiB), which only a worker running an export needs, not every
    # web process that registers the job handlers.
    from exports import runner

    runner.execute(run_id=job.payload["run_id"], lease=lease)


@periodic("exports.spawn_scheduled", every_seconds=settings.EXPORT_SCHEDULE_SECONDS)
def spawn_scheduled() -> None:
    """Spawn the child exports of schedules whose windows closed (a few at a time, in order)."""
    export_services.schedules_spawn()


@periodic("exports.sweep_runs", every_seconds=settings.EXPORT_SWEEP_SECONDS)
def sweep_runs() -> None:
    """Hand waiting runs to workers within the limits, and give running runs without a live job a new one."""
    export_services.runs_sweep()

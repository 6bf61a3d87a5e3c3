"""Background jobs of bulk exports: export runs, schedules and the sweep that keeps export runs moving."""

from __future__ import annotations

import os

from django.conf import settings

from core import heap
from core.registry import job_handler, periodic
from exports.bulk_exports import services


@job_handler(services.EXPORT_RUN_JOB, queue="exports")
def run_export(job, lease) -> None:
    """One export run (a UTC day of an export), resumed from its cursor when a worker took it over."""
    # Imported here: the runner loads pyarrow (about 25 MiB), which only a worker running an export needs, not every
    # web process that registers the job handlers.
    bound_export_allocators()
    from exports.bulk_exports import day_export

    day_export.execute(export_run_id=job.payload["run_id"], lease=lease)


def bound_export_allocators() -> None:
    """The allocator settings that keep an export worker's peak memory from creeping with the size of a day.

    - glibc's mmap threshold is fixed (EXPORT_MALLOC_MMAP_THRESHOLD_BYTES): freed multi-MiB buffers go back to the
      system instead of growing a heap that cannot shrink (core/heap.py).
    - Arrow's C++ default pool becomes the system allocator, as the export's own pool (parquet.MEMORY_POOL): the
      Parquet writer takes scratch buffers from the default pool whatever pool it is given (81,000 allocations,
      391 MiB in all, for 200,000 trace runs, at most 5 MiB at once), and mimalloc, the default, kept about 20 MiB
      resident for them. Arrow chooses that pool once, from this variable, when pyarrow loads: so before it loads.
    """
    if settings.EXPORT_MALLOC_MMAP_THRESHOLD_BYTES > 0:
        heap.fix_malloc_mmap_threshold(settings.EXPORT_MALLOC_MMAP_THRESHOLD_BYTES)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


@periodic("exports.spawn_scheduled", every_seconds=settings.EXPORT_SCHEDULE_SECONDS)
def spawn_scheduled() -> None:
    """Spawn the child exports of schedules whose windows closed (a few at a time, in order)."""
    services.schedules_spawn()


@periodic("exports.sweep_runs", every_seconds=settings.EXPORT_SWEEP_SECONDS)
def sweep_export_runs() -> None:
    """Hand waiting export runs to workers within the limits, and give running ones without a live job a new one."""
    services.export_runs_sweep()

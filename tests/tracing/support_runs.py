"""Runs written straight to the database, for tests of reads, order and retention."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from tracing.models import Run

BASE = datetime(2026, 1, 1, tzinfo=UTC)


def make_runs(workspace, project, count, *, step_seconds=1, ties=1):
    runs = []
    for index in range(count):
        run_id = uuid.uuid4()
        start = BASE + timedelta(seconds=(index // ties) * step_seconds)
        runs.append(Run(id=run_id, workspace=workspace, session=project, trace_id=run_id, name=f"r{index}",
                        run_type="chain", start_time=start, dotted_order=start.strftime("%Y%m%dT%H%M%S%fZ") +
                        str(run_id)))
    Run.objects.bulk_create(runs)
    return sorted(runs, key=lambda run: (run.start_time, run.id))

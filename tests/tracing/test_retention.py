"""Retention: runs older than TRACING_RETENTION_DAYS go, in short batches; 0 keeps everything."""

from __future__ import annotations

import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.registry import PERIODICS
from tests.tracing.support_runs import make_runs
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db


@pytest.fixture
def old_and_new_runs(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    other = TracingProject.objects.create(workspace=workspace, name="q")
    old = make_runs(workspace, project, 5) + make_runs(workspace, other, 2)  # start in January 2026
    now = timezone.now()
    fresh = Run.objects.create(id=uuid.UUID(int=1), workspace=workspace, session=project,
                               trace_id=old[0].id, name="fresh", run_type="chain", start_time=now,
                               dotted_order="x")
    return old, fresh


def test_prune_runs_deletes_runs_older_than_the_retention_in_batches(old_and_new_runs, settings):
    old, fresh = old_and_new_runs
    settings.TRACING_RETENTION_DAYS = 30
    out = StringIO()
    with CaptureQueriesContext(connection) as queries:
        call_command("prune_runs", "--batch-size", "2", stdout=out)
    assert list(Run.objects.values_list("id", flat=True)) == [fresh.id]
    assert out.getvalue().startswith("Deleted 7 runs that started before ")
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 4  # 2 + 2 + 1 in the first project, 2 in the second: one short transaction each


def test_days_on_the_command_line_override_the_setting(old_and_new_runs, settings):
    settings.TRACING_RETENTION_DAYS = 0
    call_command("prune_runs", "--days", "100000", stdout=StringIO())
    assert Run.objects.count() == 8
    call_command("prune_runs", "--days", "1", stdout=StringIO())
    assert Run.objects.count() == 1


def test_zero_days_keeps_runs_forever(old_and_new_runs, settings):
    settings.TRACING_RETENTION_DAYS = 0
    out = StringIO()
    call_command("prune_runs", stdout=out)
    PERIODICS["tracing.prune_runs"].func()
    assert Run.objects.count() == 8 and "Retention is off" in out.getvalue()


def test_the_periodic_job_applies_the_retention_every_hour(old_and_new_runs, settings):
    settings.TRACING_RETENTION_DAYS = 1
    job = PERIODICS["tracing.prune_runs"]
    assert job.every_seconds == 3600
    job.func()
    assert Run.objects.count() == 1


def test_a_run_newer_than_the_cutoff_by_a_second_stays(workspace, settings):
    settings.TRACING_RETENTION_DAYS = 2
    project = TracingProject.objects.create(workspace=workspace, name="p")
    [run] = make_runs(workspace, project, 1)
    Run.objects.filter(id=run.id).update(start_time=timezone.now() - timedelta(days=2) + timedelta(seconds=30))
    PERIODICS["tracing.prune_runs"].func()
    assert Run.objects.count() == 1

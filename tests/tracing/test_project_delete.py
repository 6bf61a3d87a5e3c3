"""Deleting a tracing project takes its runs with it, in short batches, and nothing of any other project."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.tracing.support_runs import make_runs
from tracing.models import Run, TracingProject
from tracing.services import project_delete

pytestmark = pytest.mark.django_db


def test_a_deleted_project_takes_its_runs_in_batches_and_leaves_the_others(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="agent")
    other = TracingProject.objects.create(workspace=workspace, name="other")
    make_runs(workspace, project, 5)
    kept = make_runs(workspace, other, 2)
    with CaptureQueriesContext(connection) as queries:
        assert project_delete(workspace=workspace, project_id=project.id, batch_size=2) is True
    assert not TracingProject.objects.filter(id=project.id).exists()
    assert sorted(Run.objects.values_list("id", flat=True)) == sorted(run.id for run in kept)
    batches = [q["sql"] for q in queries.captured_queries
               if q["sql"].startswith('DELETE FROM "tracing_run" WHERE "tracing_run"."id" IN')]
    assert len(batches) == 3  # 2 + 2 + 1 runs, one short transaction each (the project's cascade finds none left)


def test_another_workspaces_project_or_a_missing_one_is_not_deleted(workspace, other_workspace):
    theirs = TracingProject.objects.create(workspace=other_workspace, name="agent")
    make_runs(other_workspace, theirs, 1)
    assert project_delete(workspace=workspace, project_id=theirs.id) is False
    assert project_delete(workspace=workspace, project_id=uuid.uuid4()) is False
    assert TracingProject.objects.filter(id=theirs.id).exists() and Run.objects.filter(session=theirs).count() == 1

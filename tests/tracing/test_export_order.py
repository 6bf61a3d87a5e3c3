"""Runs come out per project in (start_time, id) order over a time range, from the index, resumable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from tests.tracing.support_runs import BASE, make_runs
from tracing.models import Run, TracingProject
from tracing.selectors import export_queryset, run_iter_for_export

pytestmark = pytest.mark.django_db


def test_runs_come_in_start_time_then_id_order_within_the_range_and_resume_after_a_cursor(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    other = TracingProject.objects.create(workspace=workspace, name="other")
    expected = make_runs(workspace, project, 30, ties=3)  # three runs share each start_time
    make_runs(workspace, other, 5)
    start, end = expected[3].start_time, expected[27].start_time
    in_range = [run.id for run in expected if start <= run.start_time < end]

    batches = list(run_iter_for_export(session_id=project.id, start=start, end=end, batch_size=4))
    assert [run.id for batch in batches for run in batch] == in_range
    assert [len(batch) for batch in batches] == [4, 4, 4, 4, 4, 4]

    cursor_run = batches[1][1]  # resume mid-way through a group of equal start times
    resumed = run_iter_for_export(session_id=project.id, start=start, end=end,
                                  after=(cursor_run.start_time, cursor_run.id), batch_size=100)
    assert [run.id for batch in resumed for run in batch] == in_range[in_range.index(cursor_run.id) + 1:]
    assert list(run_iter_for_export(session_id=project.id, start=end, end=end)) == []


def test_without_an_end_every_later_run_is_exported(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    expected = make_runs(workspace, project, 7)
    runs = [run.id for batch in run_iter_for_export(session_id=project.id, start=BASE, end=None) for run in batch]
    assert runs == [run.id for run in expected]


def test_a_page_after_a_cursor_starts_its_index_search_at_the_cursor_not_at_the_start_of_the_range(workspace):
    # Searching from the range's start and skipping every earlier row made each page of a day's export
    # slower than the last: the cursor has to be the search's lower bound.
    project = TracingProject.objects.create(workspace=workspace, name="p")
    runs = make_runs(workspace, project, 20)
    cursor = (runs[9].start_time, runs[9].id)
    query = export_queryset(session_id=project.id, start=BASE, end=BASE + timedelta(days=1), after=cursor)[:5]
    assert [run.id for run in query] == [run.id for run in runs[10:15]]
    assert '"start_time" >=' not in query.query.sql_with_params()[0]  # the range's start: implied by the cursor
    if connection.vendor == "sqlite":
        plan = query.explain()
        assert "tracing_run_session_start_idx (session_id=? AND (start_time,id)>(?,?)" in plan, plan


def test_a_cursor_before_the_range_still_keeps_the_ranges_start(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    runs = make_runs(workspace, project, 10)
    query = export_queryset(session_id=project.id, start=runs[5].start_time, end=None,
                            after=(runs[2].start_time, runs[2].id))
    assert [run.id for run in query] == [run.id for run in runs[5:]]


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="EXPLAIN plans are PostgreSQL's; run with DATABASE_URL=postgres://… to check the index")
def test_the_export_query_reads_the_session_start_time_index_without_sorting(workspace):
    projects = [TracingProject.objects.create(workspace=workspace, name=f"p{i}") for i in range(5)]
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO tracing_run (id, tenant_id, session_id, trace_id, parent_run_ids, name, run_type, start_time,
                                     status, is_root, dotted_order, inputs, extra, events, tags, created_at, updated_at)
            SELECT run_id, %s, (%s::uuid[])[1 + i %% 5], run_id, '[]', 'seeded', 'chain',
                   %s::timestamptz + i * interval '1 second', 'success', true,
                   to_char(%s::timestamptz + i * interval '1 second', 'YYYYMMDD"T"HH24MISSUS"Z"') || run_id,
                   '{}', '{}', '[]', '[]', now(), now()
            FROM (SELECT i, md5(i::text)::uuid AS run_id FROM generate_series(1, 50000) AS i) AS seed
        """, [workspace.id, [p.id for p in projects], BASE, BASE])
        cursor.execute("ANALYZE tracing_run")
    assert Run.objects.count() == 50000
    after = Run.objects.filter(session=projects[2]).order_by("start_time", "id")[5000]
    query = export_queryset(session_id=projects[2].id, start=BASE, end=BASE + timedelta(days=1),
                            after=(after.start_time, after.id))[:1000]
    plan = query.explain()
    assert "tracing_run_session_start_idx" in plan, plan
    assert "Sort" not in plan, plan
    # The cursor is the index search's lower bound, not a filter on rows read from the range's start.
    assert "ROW(start_time, id) > ROW(" in plan.split("Index Cond:", 1)[1].split("\n", 1)[0], plan
    rows = list(query)
    assert len(rows) == 1000 and (rows[0].start_time, rows[0].id) > (after.start_time, after.id)

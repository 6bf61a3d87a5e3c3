"""Reads of the trace store: projects, runs, trees, and runs in export order."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime

from django.db import connection
from django.db.models import BooleanField, Count, ExpressionWrapper, Max, Min, QuerySet
from django.db.models.expressions import RawSQL

from accounts.models import Workspace
from core.exceptions import NotFound
from tracing.models import Run, TracingProject

# The 29 exportable fields of LangSmith's run data format, in the documented order.
EXPORT_FIELDS = (
    "id", "tenant_id", "session_id", "trace_id", "parent_run_id", "parent_run_ids", "reference_example_id",
    "name", "run_type", "start_time", "end_time", "status", "is_root", "dotted_order", "trace_tier", "inputs",
    "outputs", "error", "extra", "events", "tags", "feedback_stats", "total_tokens", "prompt_tokens",
    "completion_tokens", "total_cost", "prompt_cost", "completion_cost", "first_token_time",
)


def run_export_values(run: Run) -> dict:
    """The run as a dict of EXPORT_FIELDS (UUIDs, datetimes and Decimals left as Python objects)."""
    values = {name: getattr(run, name) for name in EXPORT_FIELDS if name != "tenant_id"}
    values["tenant_id"] = run.workspace_id
    return {name: values[name] for name in EXPORT_FIELDS}


def project_list(*, workspace: Workspace, name: str | None = None) -> QuerySet[TracingProject]:
    projects = TracingProject.objects.filter(workspace=workspace).order_by("name", "id")
    return projects.filter(name=name) if name is not None else projects


def project_get(*, workspace: Workspace, project_id: uuid.UUID) -> TracingProject:
    """The project with its run count and the start times of its first and last runs."""
    project = TracingProject.objects.filter(workspace=workspace, id=project_id).first()
    if project is None:
        raise NotFound(f"Tracing project {project_id} not found.")
    stats = Run.objects.filter(session_id=project.id).aggregate(
        run_count=Count("id"), first_run_start_time=Min("start_time"), last_run_start_time=Max("start_time"))
    for key, value in stats.items():
        setattr(project, key, value)
    return project


def run_get(*, workspace: Workspace, run_id: uuid.UUID) -> Run:
    run = Run.objects.filter(workspace=workspace, id=run_id).first()
    if run is None:
        raise NotFound(f"Run {run_id} not found.")
    return run


def run_tree(*, run: Run, limit: int = 500) -> list[Run]:
    """The first `limit` runs of `run`'s trace, in tree order (depth-first, children by start time)."""
    runs = (Run.objects.filter(workspace_id=run.workspace_id, trace_id=run.trace_id).order_by("dotted_order")
            .only("id", "name", "run_type", "status", "dotted_order", "trace_id", "workspace_id"))
    return list(runs[:limit])


def run_iter_for_export(*, session_id: uuid.UUID, start: datetime, end: datetime | None,
                        after: tuple[datetime, uuid.UUID] | None = None,
                        batch_size: int = 1000) -> Iterator[list[Run]]:
    """Yield a project's runs with `start <= start_time < end`, in (start_time, id) order, in batches.

    Keyset pagination on the (session, start_time, id) index: each batch is one indexed range
    query, so neither a sort nor an OFFSET grows with the table. `after` is the (start_time, id) of
    the last run already exported (an export's cursor): iteration resumes strictly after it. The
    caller may stop at any batch and later resume from its last run. `end=None` means no upper bound.
    """
    cursor = after
    while True:
        batch = list(export_queryset(session_id=session_id, start=start, end=end, after=cursor)[:batch_size])
        if not batch:
            return
        yield batch
        if len(batch) < batch_size:
            return
        cursor = (batch[-1].start_time, batch[-1].id)


def export_queryset(*, session_id: uuid.UUID, start: datetime, end: datetime | None,
                    after: tuple[datetime, uuid.UUID] | None = None) -> QuerySet[Run]:
    """The ordered query behind run_iter_for_export (slice it; `.explain()` it in tests)."""
    runs = Run.objects.filter(session_id=session_id)
    if after is None or after[0] < start:
        runs = runs.filter(start_time__gte=start)
    if end is not None:
        runs = runs.filter(start_time__lt=end)
    if after is not None:
        # Alone as the lower bound: beside `start_time >= start` SQLite seeks to the range's start and filters
        # every earlier row out, so each page costs more than the last (a day of 5,000,000 runs: 0.45x).
        runs = runs.filter(_row_after(*after))
    return runs.order_by("start_time", "id")


def _row_after(start_time: datetime, run_id: uuid.UUID) -> ExpressionWrapper:
    # A row-value comparison is one index range condition on PostgreSQL and SQLite; the equivalent
    # `a > x OR (a = x AND b > y)` is not always planned as one.
    table = connection.ops.quote_name(Run._meta.db_table)
    time_param = Run._meta.get_field("start_time").get_db_prep_value(start_time, connection)
    id_param = Run._meta.get_field("id").get_db_prep_value(run_id, connection)
    sql = f"({table}.start_time, {table}.id) > (%s, %s)"
    return ExpressionWrapper(RawSQL(sql, (time_param, id_param)), output_field=BooleanField())

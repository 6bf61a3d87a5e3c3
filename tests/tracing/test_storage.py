"""The fast insert path writes exactly what the ORM would: rows read back the same, JSON stays queryable."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from tracing import run_inserts
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db


def full_row(workspace, project, **overrides) -> dict:
    paris = timezone(timedelta(hours=2))
    row = {
        "id": uuid.uuid4(), "workspace_id": workspace.id, "session_id": project.id, "trace_id": uuid.uuid4(),
        "parent_run_id": uuid.uuid4(), "parent_run_ids": [str(uuid.uuid4())], "reference_example_id": uuid.uuid4(),
        "name": "naïve → ünïcode 🚀", "run_type": "llm", "start_time": datetime(2026, 5, 1, 14, 0, 0, 123456, paris),
        "end_time": datetime(2026, 5, 1, 12, 0, 1, tzinfo=UTC), "status": "error", "is_root": False,
        "dotted_order": "20260501T120000123456Zabc", "trace_tier": "shortlived",
        "inputs": {"messages": [{"role": "user", "content": "héllo", "n": 1.5, "ok": True, "none": None}]},
        "outputs": {"text": "x" * 300, "nested": {"a": [1, 2, {"b": "c"}]}}, "error": "Traceback…\nValueError",
        "extra": {"metadata": {"user": "ada", "count": 3}}, "events": [{"name": "start", "time": "t"}],
        "tags": ["a", "b"], "feedback_stats": {"score": {"n": 1, "avg": 0.5}}, "total_tokens": 2**40,
        "prompt_tokens": 7, "completion_tokens": 0, "total_cost": Decimal("0.0012345678"),
        "prompt_cost": Decimal("1234567890.0000000001"), "completion_cost": Decimal("0E-10"),
        "first_token_time": datetime(2026, 5, 1, 12, 0, 0, 500000, tzinfo=UTC),
        "created_at": datetime(2026, 5, 2, tzinfo=UTC), "updated_at": datetime(2026, 5, 3, tzinfo=UTC),
    }
    row.update(overrides)
    return row


def read(run_id) -> dict:
    values = Run.objects.filter(id=run_id).values(*run_inserts.ATTNAMES).get()
    values.pop("id")
    return values


@pytest.mark.parametrize("nulls", [False, True], ids=["every-field-set", "nullable-fields-null"])
def test_rows_from_the_fast_insert_read_back_exactly_like_rows_saved_by_the_orm(workspace, nulls):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    nullable = {f.attname: None for f in run_inserts.COLUMNS if f.null} if nulls else {}
    fast, orm = full_row(workspace, project, **nullable), full_row(workspace, project, **nullable)
    orm.update({key: fast[key] for key in fast if key != "id"})
    run_inserts.runs_insert([fast])
    Run(**orm).save(force_insert=True)
    # auto_now sets updated_at on save(); everything else must match field by field.
    fast_values, orm_values = read(fast["id"]), read(orm["id"])
    fast_values.pop("updated_at"), orm_values.pop("updated_at")
    assert fast_values == orm_values
    assert fast_values["start_time"] == fast["start_time"] and fast_values["total_cost"] == fast["total_cost"]


def test_json_written_by_the_fast_insert_is_queryable(workspace):
    project = TracingProject.objects.create(workspace=workspace, name="p")
    row = full_row(workspace, project)
    run_inserts.runs_insert([row, full_row(workspace, project, extra={"metadata": {"user": "bob"}})])
    assert list(Run.objects.filter(extra__metadata__user="ada").values_list("id", flat=True)) == [row["id"]]
    assert Run.objects.filter(inputs__messages__0__content="héllo").count() == 2
    assert Run.objects.filter(start_time=row["start_time"]).count() == 2

"""Writes of the trace store: ingesting runs (from the SDK routes and the tracer) and retention.

A batch is applied atomically: every run is validated first, and if any run is invalid the
request answers 422 naming each bad run and nothing is written. The SDK validates runs before it
sends them, so a bad run means a broken client; atomic batches keep such a client's traces from
being stored half, and a corrected batch can be resent as a whole (ingestion is idempotent).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Workspace
from core.exceptions import RequestValidationError
from core.rest_errors import validation_item
from tracing import run_inserts
from tracing.models import Run, TracingProject
from tracing.timing import Stopwatch
from tracing.validation import IDENTITY_FIELDS, RunOp, dotted_segment, parse_dotted_order, set_tree_fields

log = logging.getLogger("tracing")
_SQLITE_WRITES = threading.Lock()

DEFAULT_PROJECT = "default"
# Data fields a later post or patch may fill in (identity fields never change after the first write).
DATA_FIELDS = (
    "name", "run_type", "start_time", "end_time", "inputs", "outputs", "error", "extra", "events", "tags",
    "reference_example_id", "trace_tier", "feedback_stats", "total_tokens", "prompt_tokens",
    "completion_tokens", "total_cost", "prompt_cost", "completion_cost", "first_token_time",
)
_UPDATE_FIELDS = [*DATA_FIELDS, "status", "updated_at"]
_NULL_ROW = {**dict.fromkeys(run_inserts.ATTNAMES), "is_root": True}


@dataclass
class IngestResult:
    posts: int = 0
    patches: int = 0
    created: int = 0
    updated: int = 0
    # Runs not stored: their ids belong to another workspace.
    not_stored: list[uuid.UUID] = field(default_factory=list)


def project_get_or_create(*, workspace: Workspace, name: str) -> TracingProject:
    """Return the workspace's project named `name`, creating it on first use."""
    project, _ = TracingProject.objects.get_or_create(workspace=workspace, name=name)
    return project


def runs_ingest(*, workspace: Workspace, ops: list[RunOp], default_project: str = DEFAULT_PROJECT,
                stopwatch: Stopwatch | None = None) -> IngestResult:
    """Store validated posts and patches in one transaction, merging them into existing runs.

    A post fills only what a run lacks (so a resent post never undoes a patch); a patch overwrites.
    An unknown session_id, or a run that cannot be placed in its tree, is a 422 for the whole batch.

    Run ids are global (the primary key), so a run id another workspace already holds cannot be
    stored here. Such a run is validated and placed like any other, then not written: the counts leave
    out its posts and patches and `not_stored` names it. That tells the caller the id is taken, which
    is all it tells (docs/tracing.md); only a client that reuses an id it was given meets it.
    """
    stopwatch = stopwatch or Stopwatch()
    result = IngestResult(posts=sum(op.kind == "post" for op in ops), patches=sum(op.kind == "patch" for op in ops))
    if not ops:
        return result
    with _write_lock(stopwatch), stopwatch.phase("database"):
        for attempt in range(3):
            try:
                with transaction.atomic():
                    result.created, result.updated, dropped = _apply_ops(workspace, ops, default_project)
                result.not_stored = sorted(dropped, key=str)
                result.posts -= sum(op.kind == "post" for op in ops if op.id in dropped)
                result.patches -= sum(op.kind == "patch" for op in ops if op.id in dropped)
                return result
            except IntegrityError:
                # A concurrent request stored one of these runs first: the retry merges into it.
                if attempt == 2:
                    raise
    return result


@contextmanager
def _write_lock(stopwatch: Stopwatch) -> Iterator[None]:
    # SQLite has one writer at a time, and a writer that finds the database locked sleeps in
    # growing steps (its busy timeout). Queuing this process's ingestion writes on a lock first
    # hands the database over without those sleeps. PostgreSQL writes concurrently.
    if connection.vendor != "sqlite":
        yield
        return
    with stopwatch.phase("wait"):
        _SQLITE_WRITES.acquire()
    try:
        yield
    finally:
        _SQLITE_WRITES.release()


def _apply_ops(workspace: Workspace, ops: list[RunOp], default_project: str) -> tuple[int, int, set[uuid.UUID]]:
    errors: list[dict] = []
    # A run's post applies before its patches even when a client sent them the other way round.
    ops = sorted(ops, key=lambda op: op.kind != "post")
    existing = _existing_runs(list(dict.fromkeys(op.id for op in ops)))
    foreign = {run_id for run_id, run in existing.items() if run.workspace_id != workspace.id}
    for run_id in foreign:
        del existing[run_id]
    # Only runs stored for the first time pick a project: a run never moves.
    projects = _projects_for(workspace, [op for op in ops if op.id not in existing], default_project, errors)
    known_orders = _parent_orders(workspace, ops, existing)
    created: dict[uuid.UUID, SimpleNamespace] = {}
    changed: dict[uuid.UUID, Run] = {}
    for op in ops:
        if op.id in created:
            _merge(created[op.id], op)
        elif op.id in existing:
            if _merge(existing[op.id], op):
                changed[op.id] = existing[op.id]
        elif (new_run := _new_run(workspace, op, projects, default_project, known_orders, errors)) is not None:
            created[op.id] = new_run
            known_orders[op.id] = new_run.dotted_order
    if errors:
        raise RequestValidationError(errors)
    now = timezone.now()
    for run in changed.values():
        run.updated_at = now
    dropped = foreign & created.keys()
    if dropped:
        log.warning("ingestion: dropped %d run(s) whose ids belong to another workspace (workspace %s)",
                    len(dropped), workspace.id)
    run_inserts.runs_insert([vars(run) for run_id, run in created.items() if run_id not in dropped])
    if changed:
        Run.objects.bulk_update(changed.values(), _UPDATE_FIELDS)
    return len(created) - len(dropped), len(changed), dropped


def _projects_for(workspace: Workspace, ops: list[RunOp], default_project: str, errors: list) -> dict:
    """Projects the ops name, keyed by name and by id; names seen for the first time are created."""
    names = {op.session_name or default_project for op in ops if op.session_id is None}
    ids = {op.session_id for op in ops if op.session_id is not None}
    found = TracingProject.objects.filter(workspace=workspace, name__in=names) if names else []
    projects: dict = {project.name: project for project in found}
    for name in names - projects.keys():
        projects[name] = project_get_or_create(workspace=workspace, name=name)
    if ids:
        projects.update({p.id: p for p in TracingProject.objects.filter(workspace=workspace, id__in=ids)})
    for op in ops:
        if op.session_id is not None and op.session_id not in projects:
            errors.append(validation_item([*op.loc, "session_id"], f"Tracing project {op.session_id} not found.",
                                          "value_error"))
    return projects


def _existing_runs(run_ids: list[uuid.UUID]) -> dict[uuid.UUID, Run]:
    # Most runs of a batch are new: a plain id query first, model instances only for the runs it finds.
    stored = run_inserts.existing_run_ids(run_ids)
    if not stored:
        return {}
    runs = Run.objects.filter(id__in=stored)
    if connection.features.has_select_for_update:
        # Two requests merging into the same run must not overwrite each other's fields.
        runs = runs.select_for_update()
    return {run.id: run for run in runs}


def _parent_orders(workspace: Workspace, ops: list[RunOp], existing: dict) -> dict[uuid.UUID, str]:
    """dotted_order of parents that runs without one need, from the batch and then the database."""
    known = {op.id: op.fields["dotted_order"] for op in ops if "dotted_order" in op.fields}
    known.update({run_id: run.dotted_order for run_id, run in existing.items()})
    wanted = {op.fields["parent_run_id"] for op in ops
              if "dotted_order" not in op.fields and op.fields.get("parent_run_id")} - known.keys()
    if wanted:
        stored = Run.objects.filter(workspace=workspace, id__in=wanted).values_list("id", "dotted_order")
        known.update(dict(stored))
    return known


def _new_run(workspace: Workspace, op: RunOp, projects: dict, default_project: str, known_orders: dict,
             errors: list) -> SimpleNamespace | None:
    """A new run as a row (all columns as attributes) for run_inserts.runs_insert, or None when it cannot be."""
    fields = op.fields
    if op.session_id is not None and op.session_id not in projects:
        return None  # reported by _projects_for
    missing = [name for name in ("name", "run_type") if name not in fields]
    if missing:
        # Only a patch gets here: the SDK may send a run's patch before its post.
        errors.append(validation_item(op.loc, f"Run {op.id} does not exist yet; a patch that creates it must carry "
                                      f"{' and '.join(missing)}.", "value_error"))
        return None
    if "start_time" not in fields:
        fields["start_time"] = timezone.now()
    if "dotted_order" not in fields and not _place_without_dotted_order(op, known_orders, errors):
        return None
    project = projects[op.session_id] if op.session_id else projects[op.session_name or default_project]
    now = timezone.now()
    run = SimpleNamespace(**{**_NULL_ROW, "parent_run_ids": [], "inputs": {}, "extra": {}, "events": [], "tags": []})
    vars(run).update(fields, id=op.id, workspace_id=workspace.id, session_id=project.id, created_at=now,
                     updated_at=now)
    run.status = _status(run)
    return run


def _place_without_dotted_order(op: RunOp, known_orders: dict, errors: list) -> bool:
    fields = op.fields
    segment = dotted_segment(fields["start_time"], op.id)
    parent_id = fields.get("parent_run_id")
    if parent_id is None:
        if fields.get("trace_id", op.id) != op.id:
            errors.append(validation_item([*op.loc, "trace_id"], "A run without a parent is its own trace: "
                                          "trace_id must equal id (or send dotted_order).", "value_error"))
            return False
        fields["dotted_order"] = segment
        set_tree_fields(fields, [op.id])
        return True
    parent_order = known_orders.get(parent_id)
    if parent_order is None:
        errors.append(validation_item([*op.loc, "parent_run_id"], f"Parent run {parent_id} not found; send the "
                                      "parent first or send dotted_order and trace_id.", "value_error"))
        return False
    fields["dotted_order"] = f"{parent_order}.{segment}"
    set_tree_fields(fields, [segment_id for _, segment_id in parse_dotted_order(fields["dotted_order"])])
    return True


def _merge(run: Run | SimpleNamespace, op: RunOp) -> bool:
    """Apply a later post or patch to a stored run; True when something changed."""
    changed = False
    overwrite = op.kind == "patch"
    for name, value in op.fields.items():
        if name in IDENTITY_FIELDS:
            continue
        current = getattr(run, name)
        if current != value and (overwrite or current in (None, "", {}, [])):
            setattr(run, name, value)
            changed = True
    status = _status(run)
    if status != run.status:
        run.status, changed = status, True
    return changed


def _status(run: Run | SimpleNamespace) -> str:
    if run.error:
        return Run.Status.ERROR
    return Run.Status.SUCCESS if run.end_time else Run.Status.PENDING


def runs_prune(*, older_than: datetime, batch_size: int = 1000, pause_seconds: float = 0.0) -> int:
    """Delete runs that started before `older_than`, a batch of primary keys per short transaction.

    Walks each project through the (session, start_time, id) index, so no full scan and no long lock.
    """
    deleted = 0
    for project_id in TracingProject.objects.order_by("id").values_list("id", flat=True):
        runs = Run.objects.filter(session_id=project_id, start_time__lt=older_than)
        deleted += _runs_delete(runs, batch_size=batch_size, pause_seconds=pause_seconds)
    return deleted


def _runs_delete(runs: QuerySet[Run], *, batch_size: int, pause_seconds: float = 0.0) -> int:
    """Delete one project's `runs` a batch of primary keys per short transaction, in the index's order."""
    deleted = 0
    while True:
        with transaction.atomic():
            ids = list(runs.order_by("start_time", "id").values_list("id", flat=True)[:batch_size])
            if ids:
                Run.objects.filter(id__in=ids).delete()
        deleted += len(ids)
        if len(ids) < batch_size:
            return deleted
        if pause_seconds:
            time.sleep(pause_seconds)


def project_delete(*, workspace: Workspace, project_id: uuid.UUID, batch_size: int = 1000) -> bool:
    """Delete a project and its runs (and its bulk exports); False when the workspace has no such project.

    The runs go in batches first, as retention deletes them, so a large project holds no long lock.
    """
    project = TracingProject.objects.filter(workspace=workspace, id=project_id).first()
    if project is None:
        return False
    _runs_delete(Run.objects.filter(session=project), batch_size=batch_size)
    # Runs that arrived meanwhile go with the project (the foreign key cascades).
    project.delete()
    return True


def runs_prune_expired(*, batch_size: int = 1000) -> int:
    """Apply TRACING_RETENTION_DAYS (0 keeps runs forever); return how many runs were deleted."""
    days = settings.TRACING_RETENTION_DAYS
    if days <= 0:
        return 0
    deleted = runs_prune(older_than=timezone.now() - timedelta(days=days), batch_size=batch_size)
    if deleted:
        log.info("retention: deleted %d runs older than %d days", deleted, days)
    return deleted

"""A LangChain tracer that records our own graphs' runs straight into the trace store.

    from tracing.tracer import StoreTracer, flush

    graph.invoke(inputs, config={"callbacks": [StoreTracer(workspace_id=ws.id, project_name="chat")]})
    flush(timeout=5)  # only where the caller must see the runs at once (tests, shutdown)

Each run is queued when it ends (children before their parents) and written by one background
thread per process, in batches, through the same validation and service as the SDK's runs. Tracing
never slows down or breaks the traced code: queuing is a non-blocking put (a full queue drops the run
with a warning), and a failed write is logged, never raised. Token counts are stored on the runs
that report usage (LLM calls), as LangSmith does.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import math
import os
import queue
import threading
import time
import uuid
from datetime import UTC, date, datetime
from typing import Any

from django.db import close_old_connections, connections
from langchain_core.load import dumpd
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run as TracerRun
from pydantic import BaseModel

log = logging.getLogger("tracing.tracer")

QUEUE_SIZE = 10_000
BATCH_SIZE = 500
_RUN_FIELDS = ("name", "run_type", "start_time", "end_time", "inputs", "outputs", "error", "extra", "events",
               "tags", "trace_id", "dotted_order", "parent_run_id", "reference_example_id")


class StoreTracer(BaseTracer):
    """Record a graph's runs (chains, LLM calls, tools, subgraphs) in one workspace's tracing project."""

    name = "store_tracer"
    # Called in the event loop's own order under async graphs: a handler run in an executor could see
    # a child start before its parent (and it only queues, so it is cheap enough to run inline).
    run_inline = True

    def __init__(self, *, workspace_id: uuid.UUID | str, project_name: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.workspace_id = uuid.UUID(str(workspace_id))
        self.project_name = project_name

    def on_chat_model_start(self, serialized, messages, *, run_id, tags=None, parent_run_id=None, metadata=None,
                            name=None, **kwargs) -> TracerRun:
        """Record a chat model call as an `llm` run with its messages, as LangSmith's own tracer does."""
        start_time = datetime.now(UTC)
        if metadata:
            kwargs["metadata"] = metadata
        run = TracerRun(
            id=run_id, parent_run_id=parent_run_id, serialized=serialized,
            inputs={"messages": [[dumpd(message) for message in batch] for batch in messages]},
            extra=kwargs, events=[{"name": "start", "time": start_time}], start_time=start_time,
            run_type="llm", tags=tags, name=name,
        )
        self._start_trace(run)
        self._on_llm_start(run)
        return run

    def _persist_run(self, run: TracerRun) -> None:
        """Called for a root run only; every run, the root included, is already queued by _on_run_update."""

    def _on_run_update(self, run: TracerRun) -> None:
        # BaseTracer calls this when any run ends, successfully or not.
        try:
            snapshot = {name: getattr(run, name) for name in _RUN_FIELDS}
            for name in ("inputs", "outputs", "extra"):
                if isinstance(snapshot[name], dict):
                    snapshot[name] = dict(snapshot[name])
            snapshot["id"] = run.id
            snapshot["events"] = list(snapshot["events"] or [])
            _writer().submit((self.workspace_id, self.project_name, snapshot))
        except Exception:
            log.exception("could not queue run %s for the trace store", getattr(run, "id", "?"))


def flush(timeout: float | None = None) -> bool:
    """Wait until every queued run is written (or failed); False if `timeout` seconds passed first."""
    writer = _WRITER
    return True if writer is None else writer.wait_idle(timeout)


class _Writer:
    """The process's one writer thread: drains the queue in batches into services.runs_ingest."""

    def __init__(self):
        self.pid = os.getpid()
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self.thread = threading.Thread(target=self._loop, name="tracing-store-writer", daemon=True)
        self.thread.start()

    def submit(self, item) -> None:
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            log.warning("trace store queue is full (%d runs): dropping run %s", QUEUE_SIZE, item[2].get("id"))

    def wait_idle(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.queue.all_tasks_done:
            while self.queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self.queue.all_tasks_done.wait(remaining)
        return True

    def _loop(self) -> None:
        while True:
            batch = [self.queue.get()]
            while len(batch) < BATCH_SIZE:
                try:
                    batch.append(self.queue.get(timeout=0.05))
                except queue.Empty:
                    break
            try:
                _write_batch(batch)
            except Exception:
                log.exception("trace store writer failed on a batch of %d runs", len(batch))
            finally:
                if self.queue.empty():
                    # An idle thread holds no database connection (a dropped test database, a
                    # restarted PostgreSQL and CONN_MAX_AGE all stay out of its way).
                    connections.close_all()
                for _ in batch:
                    self.queue.task_done()


def _write_batch(batch: list) -> None:
    from accounts.models import Workspace
    from tracing import services
    from tracing.validation import run_op_from_wire, without_nul

    close_old_connections()
    groups: dict[tuple, list] = {}
    for workspace_id, project_name, snapshot in batch:
        op, errors = run_op_from_wire(without_nul(_jsonable(snapshot)), kind="post", loc=["run", str(snapshot["id"])])
        if op is None:
            log.error("dropping invalid run %s from the tracer: %s", snapshot["id"], errors)
            continue
        op.session_name = project_name
        groups.setdefault((workspace_id, project_name), []).append(op)
    for (workspace_id, project_name), ops in groups.items():
        workspace = Workspace.objects.filter(id=workspace_id).first()
        if workspace is None:
            log.error("dropping %d runs: workspace %s does not exist", len(ops), workspace_id)
            continue
        try:
            services.runs_ingest(workspace=workspace, ops=ops, default_project=project_name)
        except Exception:
            log.exception("could not store %d runs in %s / %s", len(ops), workspace_id, project_name)


def _jsonable(value: Any) -> Any:
    """The run data as plain JSON types (messages, pydantic models, dataclasses and the like included)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        # Stored JSON holds 64-bit integers; a bigger one is kept as its digits.
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        # JSON (and PostgreSQL's jsonb) has no NaN or infinity.
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item) for item in value]
    return _jsonable(_json_default(value))


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


_WRITER: _Writer | None = None
_WRITER_LOCK = threading.Lock()


def _writer() -> _Writer:
    global _WRITER
    writer = _WRITER
    if writer is None or writer.pid != os.getpid():
        with _WRITER_LOCK:
            if _WRITER is None or _WRITER.pid != os.getpid():
                # After a fork the parent's thread does not exist in the child: start a new one.
                _WRITER = _Writer()
            writer = _WRITER
    return writer


atexit.register(flush, 5.0)

"""Reads of the Agent Server API: assistants and their versions, chat threads as Agent Server threads, and their
chat runs."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

import orjson
from django.db import connection
from django.db.models import Field, QuerySet

from agentruntime.models import ChatEvent, ChatRun, ChatThread
from agentruntime.selectors import Caller, ServedGraph, get_served_graph, run_frame_payloads, run_state, thread_expired
from agentruntime.services import frame_channel, thread_owned_by
from agentserver.graphs import served_graph_ids
from agentserver.models import Assistant, AssistantVersion
from agentserver.state import snapshot_get
from core.exceptions import NotFound, RequestValidationError
from core.protocol_errors import error_body

# uuid5(SYSTEM_NAMESPACE, graph_id) is a graph's system assistant id, as on LangChain's Agent Server (checked
# against `langgraph dev` 0.16.7: "echo" -> 046b5dc7-2108-582c-9c6c-31d556d138f0).
SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
# A chat run's status as the Agent Server names it (`completed` is `success`, `failed` is `error`).
RUN_STATUS_NAMES = {ChatRun.Status.PENDING: "pending", ChatRun.Status.RUNNING: "running",
                    ChatRun.Status.COMPLETED: "success", ChatRun.Status.FAILED: "error",
                    ChatRun.Status.INTERRUPTED: "interrupted"}
RUN_STATUS_FILTERS = {name: status for status, name in RUN_STATUS_NAMES.items()}
ACTIVE_RUN_STATUSES = (ChatRun.Status.PENDING, ChatRun.Status.RUNNING)


def system_assistant_id(graph_id: str) -> uuid.UUID:
    return uuid.uuid5(SYSTEM_NAMESPACE, graph_id)


def metadata_matches(found: dict | None, wanted: dict | None) -> bool:
    """True when every key of `wanted` is in `found` with an equal value, nested objects matched the same way (JSON
    containment, as PostgreSQL's `@>` does for objects)."""
    found = found or {}
    for key, value in (wanted or {}).items():
        if key not in found:
            return False
        if isinstance(value, dict) and isinstance(found[key], dict):
            if not metadata_matches(found[key], value):
                return False
        elif found[key] != value:
            return False
    return True


# --- Assistants -----------------------------------------------------------------------------------------------
def assistants_for_caller(*, caller: Caller) -> QuerySet[Assistant]:
    """The caller's assistants of the graphs this process serves."""
    return Assistant.objects.filter(**caller.owner_filter, graph_id__in=served_graph_ids())


def assistant_not_found(assistant_id: uuid.UUID | str) -> NotFound:
    return NotFound(f"Assistant with ID {assistant_id} not found")


def assistant_get(*, caller: Caller, assistant_id: uuid.UUID) -> Assistant:
    """Raises NotFound: missing, someone else's, or of a graph not served here (one answer for all three)."""
    graphs = served_graph_ids()
    if not graphs:
        raise assistant_not_found(assistant_id)
    # Written out (the same rows as assistants_for_caller): every run looks its assistant up, and building the
    # query through the ORM cost several times running it. At most one row: one per owner and id.
    owner = caller.owner_filter
    where = ["owner_kind = %s", "assistant_id = %s", f"graph_id IN ({', '.join(['%s'] * len(graphs))})"]
    params = [owner["owner_kind"], _ASSISTANT_ID.get_db_prep_value(assistant_id, connection), *graphs]
    for column, field in (("workspace_id", _WORKSPACE), ("user_id", _USER)):
        if owner[column] is None:
            where.append(f"{column} IS NULL")
        else:
            where.append(f"{column} = %s")
            params.append(field.get_db_prep_value(owner[column], connection))
    sql = f"SELECT * FROM {Assistant._meta.db_table} WHERE {' AND '.join(where)}"
    found = next(iter(Assistant.objects.raw(sql, params)), None)
    if found is None:
        raise assistant_not_found(assistant_id)
    return found


_ASSISTANT_ID, _WORKSPACE, _USER = (cast(Field, Assistant._meta.get_field(name))
                                    for name in ("assistant_id", "workspace", "user"))


def assistant_search(*, caller: Caller, graph_id: str | None = None, metadata: dict | None = None,
                     name: str | None = None, sort_by: str = "created_at", sort_order: str = "desc") -> list:
    rows = assistants_for_caller(caller=caller)
    if graph_id:
        rows = rows.filter(graph_id=graph_id)
    if name:
        rows = rows.filter(name__icontains=name)
    sign = "-" if sort_order == "desc" else ""
    rows = rows.order_by(f"{sign}{sort_by}", f"{sign}id")
    # JSON containment in Python: SQLite has no `contains` lookup on JSON, and one path keeps both databases alike.
    return [a for a in rows if metadata_matches(a.metadata, metadata)]


def assistant_versions(*, assistant: Assistant, metadata: dict | None = None) -> list[AssistantVersion]:
    """The assistant's versions, newest first."""
    rows = assistant.versions.order_by("-version")
    return [v for v in rows if metadata_matches(v.metadata, metadata)]


# --- Threads --------------------------------------------------------------------------------------------------
def thread_not_found(thread_id: str) -> NotFound:
    return NotFound(f"Thread with ID {thread_id} not found")


def thread_get(*, caller: Caller, thread_id: str) -> ChatThread:
    """Raises NotFound: missing, expired (agentruntime.selectors.thread_expired) or someone else's (one answer for
    all)."""
    thread = ChatThread.objects.filter(pk=thread_id).exclude(thread_expired()).first()
    if thread is None or not thread_owned_by(thread, caller):
        raise thread_not_found(thread_id)
    return thread


def thread_graph(thread: ChatThread) -> ServedGraph:
    """The served graph that reads and writes the thread's state: its metadata's `graph_id` (as on the Agent
    Server), else the graph its last protocol run used, else the default graph (how the examples bootstrap)."""
    wanted = (thread.metadata or {}).get("graph_id")
    return get_served_graph(wanted if wanted in served_graph_ids() else thread.graph_name)


def thread_view(thread: ChatThread) -> dict[str, Any]:
    """The thread's status, values and interrupts, derived from its runs and its checkpoints.

    The runs are read before the checkpoints: a run marks itself finished only after its last checkpoint is
    written, so a thread seen idle here is never paired with values from the middle of the run that just ended
    (read the other way round, a run ending between the two reads showed "idle" with a step's partial values).
    """
    busy = ChatRun.objects.filter(thread=thread, status__in=(ChatRun.Status.RUNNING, ChatRun.Status.PENDING)).exists()
    latest = (ChatRun.objects.filter(thread=thread).exclude(status=ChatRun.Status.PENDING)
              .order_by("-created_at").first())
    snapshot = snapshot_get(thread_graph(thread), thread.id)
    interrupts: dict[str, list] = {}
    if snapshot is not None:
        for task in snapshot.tasks or ():
            if task.interrupts:
                interrupts[task.id] = [{"value": i.value, "id": getattr(i, "id", None)} for i in task.interrupts]
    if busy:
        status = "busy"
    elif latest is not None and latest.status == ChatRun.Status.FAILED:
        status = "error"
    elif snapshot is not None and (interrupts or snapshot.next):
        status = "interrupted"
    else:
        status = "idle"
    # An errored thread shows its last run's error, as the run's `__error__` ({"error": type, "message": …}).
    error = run_result(run=latest)["__error__"] if status == "error" and latest is not None else None
    return {"status": status, "values": snapshot.values if snapshot is not None else None,
            "interrupts": interrupts, "error": error, "has_state": snapshot is not None}


def thread_search(*, caller: Caller, metadata: dict | None = None, values: dict | None = None,
                  status: str | None = None, ids: list[str] | None = None, sort_by: str = "updated_at",
                  sort_order: str = "desc", limit: int | None = None,
                  offset: int = 0) -> tuple[list[tuple[ChatThread, dict | None]], int]:
    """A page of the caller's matching threads (with their views where a filter needed them) and the total.

    Metadata is matched by the database on PostgreSQL (JSON containment); `values`, `status` and sorting by status
    need each thread's state, so those searches, and metadata on SQLite (no JSON `contains`), filter in Python.
    """
    rows = ChatThread.objects.filter(**caller.owner_filter).exclude(thread_expired())
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    in_database = connection.vendor == "postgresql"
    if metadata and in_database:
        rows = rows.filter(metadata__contains=metadata)
    sign = "-" if sort_order == "desc" else ""
    if sort_by != "status":
        column = {"thread_id": "id", "state_updated_at": "updated_at"}.get(sort_by, sort_by)
        rows = rows.order_by(f"{sign}{column}", f"{sign}id")
    derived = bool(values) or status is not None or sort_by == "status"
    if not derived and (in_database or not metadata):
        end = None if limit is None else offset + limit
        return [(thread, None) for thread in rows[offset:end]], rows.count()
    found = []
    for thread in rows.iterator():
        if not metadata_matches(thread.metadata, metadata):
            continue
        view = thread_view(thread) if derived else None
        if view is not None and (status and view["status"] != status
                                 or values and not metadata_matches(view["values"], values)):
            continue
        found.append((thread, view))
    if sort_by == "status":
        # Sorting by status derived every thread's view: none is None here.
        found.sort(key=lambda pair: (cast(dict, pair[1])["status"], pair[0].created_at), reverse=sort_order == "desc")
    end = None if limit is None else offset + limit
    return found[offset:end], len(found)


def threads_expired(*, now: datetime, limit: int) -> list[ChatThread]:
    """Threads whose time-to-live has run out by `now`, the longest expired first."""
    return list(ChatThread.objects.filter(expires_at__lte=now).order_by("expires_at")[:limit])


# --- Chat runs (of kind "agent_server", and the protocol's, on the same threads) ------------------------------
def run_not_found() -> NotFound:
    return NotFound("Not Found")


def run_get(*, caller: Caller, thread_id: str, run_id: str) -> ChatRun:
    """Raises NotFound: the thread is not the caller's, or it has no such run."""
    thread = thread_get(caller=caller, thread_id=thread_id)
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        raise RequestValidationError.single(["path", "run_id"], "Invalid run ID: must be a UUID") from None
    run = ChatRun.objects.filter(thread=thread, pk=key).first()
    if run is None:
        raise run_not_found()
    return run


def run_by_id(*, run_id: uuid.UUID | str) -> ChatRun | None:
    return ChatRun.objects.filter(pk=run_id).first()


def run_list(*, caller: Caller, thread_id: str, limit: int, offset: int, status: str | None) -> list[ChatRun]:
    thread = thread_get(caller=caller, thread_id=thread_id)
    rows = ChatRun.objects.filter(thread=thread)
    if status:
        rows = rows.filter(status=RUN_STATUS_FILTERS[status])
    return list(rows.order_by("-created_at", "-pk")[offset:offset + limit])


def run_result_by_id(*, run_id: uuid.UUID | str) -> dict[str, Any]:
    """`run_result` of the run as stored now, in two written-out statements: every runs.wait reads it."""
    run_id = uuid.UUID(str(run_id))
    state = run_state(run_id=run_id)
    if state is None:
        raise NotFound(f"Run {run_id} not found")
    thread_id, status, error = state
    payloads = run_frame_payloads(thread_id=thread_id, run_id=run_id, channel=frame_channel(run_id))
    return _result(thread_id=thread_id, status=status, error=error, payloads=payloads)


def run_result(*, run: ChatRun) -> dict[str, Any]:
    """What `runs.wait` and `runs.join` answer for an ended run: its last values (or interrupt), `__error__` for
    a failure, the thread's values when the run streamed none."""
    rows = ChatEvent.objects.filter(thread_id=run.thread_id, run=run, channel=frame_channel(run.pk)).order_by("seq")
    return _result(thread_id=run.thread_id, status=run.status, error=run.error,
                   payloads=rows.values_list("payload", flat=True))


def _result(*, thread_id: str, status: str, error: str, payloads: Iterable[str]) -> dict[str, Any]:
    latest, asked = None, []
    for payload in payloads:
        head, _, data = payload.partition("\ndata: ")
        name = head.removeprefix("event: ")
        if name == "error":
            return {"__error__": orjson.loads(data)}
        if name == "values":
            latest = orjson.loads(data)
            if isinstance(latest, dict) and "__interrupt__" in latest:
                asked.append(latest)
    if status == ChatRun.Status.FAILED:
        return {"__error__": error_body("RunError", error)}
    every = {str(found.get("id")): found for frame in asked for found in frame["__interrupt__"]}
    if len(every) > 1:
        # Parallel branches asking at once send one `values` frame each: as `langgraph dev` does, the answer is then
        # every interrupt, without the values (tests/agentserver/test_differential_interrupts.py).
        return {"__interrupt__": list(every.values())}
    if asked:
        return asked[-1]
    if latest is not None:
        return latest
    thread = ChatThread.objects.filter(pk=thread_id).first()
    view = thread_view(thread) if thread is not None else None
    return (view or {}).get("values") or {}

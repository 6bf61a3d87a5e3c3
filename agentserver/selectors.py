"""Reads of the Agent Server API: assistants and their versions, and chat threads as Agent Server threads."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection

from agentserver.graphs import served_graph_ids
from agentserver.models import Assistant, AssistantVersion
from agentserver.state import snapshot_get
from chat.access import Caller
from chat.graph_runtime import ServedGraph, get_served_graph
from chat.models import ChatRun, ChatThread
from chat.services import thread_owned_by
from core.exceptions import NotFound

# uuid5(SYSTEM_NAMESPACE, graph_id) is a graph's system assistant id, as on LangChain's Agent Server (checked
# against `langgraph dev` 0.16.7: "echo" -> 046b5dc7-2108-582c-9c6c-31d556d138f0).
SYSTEM_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
THREAD_STATUSES = ("idle", "busy", "interrupted", "error")


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
def assistants_for_caller(*, caller: Caller):
    """The caller's assistants of the graphs this process serves."""
    return Assistant.objects.filter(**caller.owner_filter, graph_id__in=served_graph_ids())


def assistant_not_found(assistant_id) -> NotFound:
    return NotFound(f"Assistant with ID {assistant_id} not found")


def assistant_get(*, caller: Caller, assistant_id: uuid.UUID) -> Assistant:
    """Raises NotFound: missing, someone else's, or of a graph not served here (one answer for all three)."""
    found = assistants_for_caller(caller=caller).filter(assistant_id=assistant_id).first()
    if found is None:
        raise assistant_not_found(assistant_id)
    return found


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
    """Raises NotFound: missing or someone else's (the same answer for both)."""
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None or not thread_owned_by(thread, caller):
        raise thread_not_found(thread_id)
    return thread


def thread_graph(thread: ChatThread) -> ServedGraph:
    """The served graph that reads and writes the thread's state: its metadata's `graph_id` (as on the Agent
    Server), else the graph its last protocol run used, else the default graph (how the examples bootstrap)."""
    wanted = (thread.metadata or {}).get("graph_id")
    return get_served_graph(wanted if wanted in served_graph_ids() else thread.graph_name)


def thread_view(thread: ChatThread) -> dict[str, Any]:
    """The thread's status, values and interrupts, derived from its runs and its checkpoints."""
    snapshot = snapshot_get(thread_graph(thread), thread.id)
    runs = list(ChatRun.objects.filter(thread=thread).exclude(status=ChatRun.Status.PENDING)
                .order_by("-created_at").values_list("status", flat=True)[:1])
    interrupts: dict[str, list] = {}
    if snapshot is not None:
        for task in snapshot.tasks or ():
            if task.interrupts:
                interrupts[task.id] = [{"value": i.value, "id": getattr(i, "id", None)} for i in task.interrupts]
    if ChatRun.objects.filter(thread=thread, status__in=(ChatRun.Status.RUNNING, ChatRun.Status.PENDING)).exists():
        status = "busy"
    elif runs and runs[0] == ChatRun.Status.FAILED:
        status = "error"
    elif snapshot is not None and (interrupts or snapshot.next):
        status = "interrupted"
    else:
        status = "idle"
    return {"status": status, "values": snapshot.values if snapshot is not None else None,
            "interrupts": interrupts, "has_state": snapshot is not None}


def thread_search(*, caller: Caller, metadata: dict | None = None, values: dict | None = None,
                  status: str | None = None, ids: list[str] | None = None, sort_by: str = "updated_at",
                  sort_order: str = "desc", limit: int | None = None,
                  offset: int = 0) -> tuple[list[tuple[ChatThread, dict | None]], int]:
    """A page of the caller's matching threads (with their views where a filter needed them) and the total.

    Metadata is matched by the database on PostgreSQL (JSON containment); `values`, `status` and sorting by status
    need each thread's state, so those searches, and metadata on SQLite (no JSON `contains`), filter in Python.
    """
    rows = ChatThread.objects.filter(**caller.owner_filter)
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
        found.sort(key=lambda pair: (pair[1]["status"], pair[0].created_at), reverse=sort_order == "desc")
    end = None if limit is None else offset + limit
    return found[offset:end], len(found)


def threads_expired(*, now, limit: int) -> list[ChatThread]:
    """Threads whose time-to-live has run out by `now`, the longest expired first."""
    return list(ChatThread.objects.filter(expires_at__lte=now).order_by("expires_at")[:limit])

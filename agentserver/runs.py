"""Runs of the Agent Server API: created queued (chat/run_queue.py executes them), listed, cancelled, deleted.

A run is a chat.models.ChatRun of kind "agent_server": the chat protocol's runs and these share one table, one
executor, one checkpointer and one event log, so a thread is busy for both. Statuses are shown as the Agent Server
names them (`completed` is `success`, `failed` is `error`).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import orjson
from django.db import transaction
from django.utils import timezone

from agentserver import selectors
from agentserver.models import Assistant
from agentserver.services import assistants_ensure_system
from chat import services as chat_services
from chat.access import Caller
from chat.graph_runtime import get_checkpointer
from chat.models import ChatEvent, ChatRun, ChatThread
from chat.run_queue import notify_executors
from chat.stream_modes import STREAM_MODES
from core import egress
from core.exceptions import Conflict, NotFound, RequestValidationError

STATUS_NAMES = {ChatRun.Status.PENDING: "pending", ChatRun.Status.RUNNING: "running",
                ChatRun.Status.COMPLETED: "success", ChatRun.Status.FAILED: "error",
                ChatRun.Status.INTERRUPTED: "interrupted"}
STATUS_FILTERS = {name: status for status, name in STATUS_NAMES.items()}
ACTIVE = (ChatRun.Status.PENDING, ChatRun.Status.RUNNING)
BUSY_MESSAGE = ("Thread is already running a task. Wait for it to finish or choose a different multitask "
                "strategy.")
# Kwargs of a run as the Agent Server shows them, in its order (the run also keeps its `checkpoint`, unshown).
KWARG_NAMES = ("input", "command", "config", "context", "stream_mode", "interrupt_before", "interrupt_after",
               "webhook", "feedback_keys", "temporary", "subgraphs", "resumable", "checkpoint_during",
               "durability")


def run_not_found() -> NotFound:
    return NotFound("Not Found")


def run_out(run: ChatRun) -> dict[str, Any]:
    kwargs = run.kwargs or {}
    return {"run_id": str(run.pk), "thread_id": run.thread_id, "assistant_id": run.assistant_id or None,
            "created_at": run.created_at, "updated_at": run.updated_at, "status": STATUS_NAMES.get(run.status),
            "metadata": run.metadata or {}, "kwargs": {k: kwargs.get(k) for k in KWARG_NAMES},
            "multitask_strategy": run.multitask_strategy or "reject", "langsmith_session_name": None}


# --- Reads ----------------------------------------------------------------------------------------------------
def run_get(*, caller: Caller, thread_id: str, run_id: str) -> ChatRun:
    """Raises NotFound: the thread is not the caller's, or it has no such run."""
    thread = selectors.thread_get(caller=caller, thread_id=thread_id)
    try:
        key = uuid.UUID(str(run_id))
    except ValueError:
        raise RequestValidationError.single(["path", "run_id"], "Invalid run ID: must be a UUID") from None
    run = ChatRun.objects.filter(thread=thread, pk=key).first()
    if run is None:
        raise run_not_found()
    return run


def is_queued(run: ChatRun) -> bool:
    return run.status == ChatRun.Status.PENDING


def run_by_id(*, run_id) -> ChatRun | None:
    return ChatRun.objects.filter(pk=run_id).first()


def run_list(*, caller: Caller, thread_id: str, limit: int, offset: int, status: str | None) -> list[ChatRun]:
    thread = selectors.thread_get(caller=caller, thread_id=thread_id)
    rows = ChatRun.objects.filter(thread=thread)
    if status:
        rows = rows.filter(status=STATUS_FILTERS[status])
    return list(rows.order_by("-created_at", "-pk")[offset:offset + limit])


def run_result(*, run: ChatRun) -> dict[str, Any]:
    """What `runs.wait` and `runs.join` answer for an ended run: its last values (or interrupt), `__error__` for
    a failure, the thread's values when the run streamed none."""
    channel = f"as:{run.pk}"
    latest, interrupts = None, None
    rows = ChatEvent.objects.filter(thread_id=run.thread_id, run=run, channel=channel).order_by("seq")
    for payload in rows.values_list("payload", flat=True):
        head, _, data = payload.partition("\ndata: ")
        name = head.removeprefix("event: ")
        if name == "error":
            return {"__error__": orjson.loads(data)}
        if name == "values":
            latest = orjson.loads(data)
            if isinstance(latest, dict) and "__interrupt__" in latest:
                interrupts = latest
    if run.status == ChatRun.Status.FAILED:
        return {"__error__": {"error": "RunError", "message": run.error}}
    if interrupts is not None:
        return interrupts
    if latest is not None:
        return latest
    thread = ChatThread.objects.filter(pk=run.thread_id).first()
    view = selectors.thread_view(thread) if thread is not None else None
    return (view or {}).get("values") or {}


# --- Creation -------------------------------------------------------------------------------------------------
def _assistant_for(*, caller: Caller, raw: str) -> Assistant:
    if raw in selectors.served_graph_ids():
        key = selectors.system_assistant_id(raw)
    else:
        try:
            key = uuid.UUID(str(raw))
        except ValueError:
            graphs = ", ".join(selectors.served_graph_ids())
            raise RequestValidationError.single(
                ["body", "assistant_id"], f"Invalid assistant: '{raw}'. Must be either:\n- A valid assistant UUID, "
                                          f"or\n- One of the registered graphs: {graphs}") from None
    try:
        return selectors.assistant_get(caller=caller, assistant_id=key)
    except NotFound:
        # Only a miss needs the system assistants ensured: every run would otherwise pay a query for it.
        assistants_ensure_system(caller=caller)
    return selectors.assistant_get(caller=caller, assistant_id=key)


def _check_body(data: dict) -> None:
    unknown = [m for m in data.get("stream_mode") or () if m not in STREAM_MODES]
    if unknown:
        raise RequestValidationError.single(["body", "stream_mode"], f"Invalid stream_mode: {unknown[0]!r}. "
                                                                      f"Expected one of {list(STREAM_MODES)}")
    if data.get("webhook"):
        try:
            egress.check_url(data["webhook"])
        except egress.EgressDenied as exc:
            raise RequestValidationError.single(["body", "webhook"], f"Webhook URL refused: {exc.detail}") from None


def _run_config(assistant: Assistant, data: dict) -> tuple[dict, dict]:
    """The run's config and context. Without a context, the request's configurable stands for it (as on the
    Agent Server, which then mirrors the context into the configurable)."""
    config = dict(assistant.config or {})
    given = data.get("config") or {}
    configurable = {**(config.get("configurable") or {}), **(given.get("configurable") or {})}
    config.update({k: v for k, v in given.items() if k != "configurable"})
    context = {**(assistant.context or {}), **(data.get("context") or given.get("configurable") or {})}
    configurable = {**configurable, **context}
    configurable.update(graph_id=assistant.graph_id, assistant_id=str(assistant.assistant_id))
    return {**config, "configurable": configurable}, context


def _run_metadata(*, assistant: Assistant, thread: ChatThread, created: bool, data: dict) -> dict:
    """The assistant's metadata, an existing thread's (with the graph it now runs), the config's and the run's.

    A thread the run creates adds nothing (so no `graph_id`), as on the Agent Server.
    """
    from_thread = {} if created else {**(thread.metadata or {}), "graph_id": assistant.graph_id}
    return {**(assistant.metadata or {}), **from_thread, **((data.get("config") or {}).get("metadata") or {}),
            **(data.get("metadata") or {}), "assistant_id": str(assistant.assistant_id)}


def _thread_for(*, caller: Caller, thread_id: str | None, data: dict) -> tuple[ChatThread, bool, bool]:
    """(The run's thread, whether it is temporary, whether the run created it.)"""
    if thread_id is None:
        thread = ChatThread.objects.create(id=str(uuid.uuid4()), **caller.owner_fields)
        return thread, data.get("on_completion", "delete") == "delete", True
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None and data.get("if_not_exists") == "create":
        return chat_services.thread_claim(thread_id=thread_id, caller=caller), False, True
    if thread is None or not chat_services.thread_owned_by(thread, caller):
        raise NotFound("Thread or assistant not found.")
    return thread, False, False


def _make_room(*, thread: ChatThread, strategy: str) -> list[ChatRun]:
    """Apply the multitask strategy to the thread's active runs; the running runs now being cancelled."""
    active = list(ChatRun.objects.filter(thread=thread, status__in=ACTIVE))
    if not active or strategy == "enqueue":
        return []
    if strategy == "reject":
        raise Conflict(BUSY_MESSAGE)
    return [run for run in active if not _cancel_now(run=run, rollback=strategy == "rollback")]


def run_create(*, caller: Caller, thread_id: str | None, data: dict) -> tuple[ChatRun, list[ChatRun]]:
    """Queue a run; (the run, running runs its multitask strategy is cancelling).

    Raises:
        NotFound: unknown assistant or thread (or someone else's). Conflict: `reject` on a busy thread.
        RequestValidationError: an unknown stream mode, or a webhook the egress guard refuses.
    """
    _check_body(data)
    assistant = _assistant_for(caller=caller, raw=str(data["assistant_id"]))
    config, context = _run_config(assistant, data)
    with transaction.atomic():
        thread, temporary, created = _thread_for(caller=caller, thread_id=thread_id, data=data)
        ChatThread.objects.select_for_update().filter(pk=thread.pk).first()
        strategy = data.get("multitask_strategy") or "enqueue"
        cancelling = _make_room(thread=thread, strategy=strategy)
        checkpoint = dict(data.get("checkpoint") or {})
        if data.get("checkpoint_id"):
            checkpoint["checkpoint_id"] = data["checkpoint_id"]
        run_id = uuid.uuid4()
        metadata = _run_metadata(assistant=assistant, thread=thread, created=created, data=data)
        run_config = {**config, "configurable": {**config["configurable"], "run_id": str(run_id),
                                                 "thread_id": thread.pk}, "metadata": metadata}
        kwargs = {"input": data.get("input"), "command": data.get("command"), "config": run_config,
                  "context": context,
                  "stream_mode": data.get("stream_mode") or ["values"],
                  "interrupt_before": data.get("interrupt_before"), "interrupt_after": data.get("interrupt_after"),
                  "webhook": data.get("webhook"), "feedback_keys": None, "temporary": temporary,
                  "subgraphs": bool(data.get("stream_subgraphs")), "resumable": bool(data.get("stream_resumable")),
                  "checkpoint_during": data.get("checkpoint_during", True), "durability": _durability(data),
                  "checkpoint": checkpoint or None,
                  "on_completion": data.get("on_completion") if thread_id is None else None}
        after = data.get("after_seconds")
        run = ChatRun.objects.create(
            id=run_id, thread=thread, status=ChatRun.Status.PENDING, kind="agent_server",
            graph_name=assistant.graph_id, assistant_id=str(assistant.assistant_id), kwargs=kwargs,
            metadata=metadata, multitask_strategy=strategy, start_seq=_last_seq(thread),
            available_at=timezone.now() + timedelta(seconds=after) if after else None)
        _remember_graph(thread=thread, assistant=assistant)
        transaction.on_commit(notify_executors)
    return run, cancelling


def _durability(data: dict) -> str:
    if data.get("durability"):
        return data["durability"]
    return "async" if data.get("checkpoint_during") in (None, True) else "exit"


def _last_seq(thread: ChatThread) -> int:
    return ChatThread.objects.filter(pk=thread.pk).values_list("last_seq", flat=True).get()


def _remember_graph(*, thread: ChatThread, assistant: Assistant) -> None:
    """A run adds graph_id and assistant_id to its thread's metadata, as on the Agent Server."""
    metadata = {**(thread.metadata or {}), "graph_id": assistant.graph_id,
                "assistant_id": str(assistant.assistant_id)}
    ChatThread.objects.filter(pk=thread.pk).update(metadata=metadata, has_state=True, graph_name=assistant.graph_id,
                                                   updated_at=timezone.now())
    thread.metadata = metadata


# --- Cancelling and deleting ----------------------------------------------------------------------------------
def _cancel_now(*, run: ChatRun, rollback: bool) -> bool:
    """End a pending run at once (True), or ask the process running it to stop (False)."""
    if run.status == ChatRun.Status.PENDING:
        if rollback:
            run.delete()
            return True
        if chat_services.run_cancel_queued(run=run):
            return True
        run.refresh_from_db()  # an executor claimed it meanwhile
    chat_services.run_cancel_request(run=run, rollback=rollback)
    return False


def run_cancel(*, run: ChatRun, rollback: bool) -> bool:
    """Cancel the run; True when it has ended already (it was pending or had ended)."""
    if run.status not in ACTIVE:
        return True
    return _cancel_now(run=run, rollback=rollback)


def run_delete(*, run: ChatRun) -> None:
    """Raises Conflict: the run is still active (as the Agent Server refuses it)."""
    if run.status in ACTIVE:
        raise Conflict("Cannot delete an active run: cancel it first.")
    run.delete()


def runs_cancel_many(*, caller: Caller, thread_id: str | None, run_ids: list[str] | None, status: str | None,
                     rollback: bool) -> list[ChatRun]:
    """Cancel the caller's matching active runs; the running ones (their processes are asked to stop).

    Raises:
        NotFound: nothing matched.
    """
    rows = ChatRun.objects.filter(thread__in=ChatThread.objects.filter(**caller.owner_filter), status__in=ACTIVE)
    if thread_id:
        rows = rows.filter(thread_id=thread_id)
    if run_ids:
        rows = rows.filter(pk__in=run_ids)
    if status in ("pending", "running"):
        rows = rows.filter(status=STATUS_FILTERS[status])
    found = list(rows)
    if not found:
        raise NotFound("No matching runs to cancel. Check that the runs exist and are pending or running.")
    return [run for run in found if not _cancel_now(run=run, rollback=rollback)]


def run_finish_temporary(*, run: ChatRun) -> None:
    """After a stateless run with `on_completion: delete` ended: delete its thread."""
    if not (run.kwargs or {}).get("temporary"):
        return
    # One write transaction, not one per table: on SQLite every transaction queues for the single write lock.
    with transaction.atomic():
        thread = ChatThread.objects.filter(pk=run.thread_id).first()
        if thread is not None:
            get_checkpointer().delete_thread(thread.id)
            chat_services.thread_delete(thread=thread)

"""Writes of the Agent Server API: assistants (versioned), chat threads as Agent Server threads, and their chat runs.

An Agent Server run is a agentruntime.models.ChatRun of kind AGENT_SERVER, created queued (agentruntime/runs/queue.py
executes it): the chat protocol's runs and these share one table, one executor, one checkpointer and one event log, so a
thread is busy for both.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentruntime import services as chat_services
from agentruntime.models import ChatRun, ChatThread
from agentruntime.selectors import Caller, thread_ttl_default, thread_ttl_expiry
from agentruntime.services import get_checkpointer, notify_executors, run_stop
from agentserver import selectors
from agentserver.graphs import served_graph_ids
from agentserver.models import Assistant, AssistantVersion, Cron
from agentserver.state import state_update
from agentserver.stream_modes import STREAM_MODES
from core import egress
from core.exceptions import BadRequest, Conflict, NotFound, RequestValidationError

VERSIONED_FIELDS = ("graph_id", "name", "description", "config", "context", "metadata")
BUSY_MESSAGE = ("Thread is already running a task. Wait for it to finish or choose a different multitask "
                "strategy.")


_UNSET: Any = object()


def graph_not_found(graph_id: str) -> NotFound:
    return NotFound(f"Graph '{graph_id}' not found. Expected one of: {served_graph_ids()}")


def _check_config(config: dict, context: dict | None) -> dict:
    """The config to store: `context` is mirrored into `configurable`, as the Agent Server does."""
    if context and (config.get("configurable") or {}):
        raise BadRequest("Cannot specify both configurable and context. Prefer setting context alone. Context was "
                         "introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.")
    return {**config, "configurable": dict(context)} if context else config


def _add_version(assistant: Assistant) -> None:
    AssistantVersion.objects.create(assistant=assistant, version=assistant.version, created_at=assistant.updated_at,
                                    **{f: getattr(assistant, f) for f in VERSIONED_FIELDS})


# --- Assistants -----------------------------------------------------------------------------------------------
def assistants_ensure_system(*, caller: Caller) -> None:
    """Give the caller the system assistant of every served graph it does not have yet."""
    wanted = {selectors.system_assistant_id(g): g for g in served_graph_ids()}
    have = set(Assistant.objects.filter(**caller.owner_filter, assistant_id__in=wanted)
               .values_list("assistant_id", flat=True))
    for assistant_id, graph_id in wanted.items():
        if assistant_id in have:
            continue
        try:
            with transaction.atomic():
                assistant = Assistant.objects.create(
                    assistant_id=assistant_id, **caller.owner_fields, graph_id=graph_id, name=graph_id,
                    metadata={"created_by": "system"}, is_system=True)
                _add_version(assistant)
        except IntegrityError:
            pass  # a concurrent request created it


def assistant_create(*, caller: Caller, graph_id: str, assistant_id: uuid.UUID | None = None,
                     config: dict | None = None, context: dict | None = None, metadata: dict | None = None,
                     name: str | None = None, description: str | None = None,
                     if_exists: str = "raise") -> Assistant:
    """Raises NotFound (graph not served), Conflict (the id exists and `if_exists` is "raise"), BadRequest."""
    if graph_id not in served_graph_ids():
        raise graph_not_found(graph_id)
    assistant_id = assistant_id or uuid.uuid4()
    config = _check_config(config or {}, context)
    try:
        with transaction.atomic():
            assistant = Assistant.objects.create(
                assistant_id=assistant_id, **caller.owner_fields, graph_id=graph_id, name=name or "Untitled",
                description=description, config=config, context=context or {}, metadata=metadata or {})
            _add_version(assistant)
            return assistant
    except IntegrityError:
        existing = Assistant.objects.filter(**caller.owner_filter, assistant_id=assistant_id).first()
    if existing is not None and if_exists == "do_nothing":
        return existing
    raise Conflict(f"Assistant {assistant_id} already exists")


@transaction.atomic
def assistant_update(*, assistant: Assistant, graph_id: str | None = None, config: dict | None = None,
                     context: dict | None = None, metadata: dict | None = None, name: str | None = None,
                     description: str | None = None) -> Assistant:
    """A new version from the given fields (metadata is merged into the current one) that becomes the one in use."""
    if graph_id is not None and graph_id not in served_graph_ids():
        raise graph_not_found(graph_id)
    assistant = Assistant.objects.select_for_update().get(pk=assistant.pk)
    if graph_id is not None:
        assistant.graph_id = graph_id
    if config is not None or context is not None:
        new_context = context if context is not None else assistant.context
        base = config if config is not None else {k: v for k, v in assistant.config.items() if k != "configurable"}
        assistant.config, assistant.context = _check_config(base, new_context), new_context
    if metadata is not None:
        assistant.metadata = {**assistant.metadata, **metadata}
    if name is not None:
        assistant.name = name
    if description is not None:
        assistant.description = description
    assistant.version = (assistant.versions.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    assistant.updated_at = timezone.now()
    assistant.save()
    _add_version(assistant)
    return assistant


@transaction.atomic
def assistant_set_latest(*, assistant: Assistant, version: int) -> Assistant:
    """Make an earlier (or later) version the one in use. Raises NotFound for an unknown version."""
    found = assistant.versions.filter(version=version).first()
    if found is None:
        raise NotFound(f"Version {version} not found for assistant {assistant.assistant_id}")
    for field in VERSIONED_FIELDS:
        setattr(assistant, field, getattr(found, field))
    assistant.version = version
    assistant.save()
    return assistant


def assistant_delete(*, caller: Caller, assistant: Assistant, delete_threads: bool = False) -> None:
    """Delete the assistant and its versions (and, when asked, the threads whose metadata names it).

    Raises:
        Conflict: it is a served graph's system assistant, which every caller keeps.
    """
    if assistant.is_system:
        raise Conflict(f"Assistant {assistant.assistant_id} is the system assistant of graph "
                       f"'{assistant.graph_id}' and cannot be deleted")
    if delete_threads:
        for thread in ChatThread.objects.filter(**caller.owner_filter):
            if (thread.metadata or {}).get("assistant_id") == str(assistant.assistant_id):
                thread_delete(thread=thread)
    assistant.delete()


# --- Threads --------------------------------------------------------------------------------------------------
_expiry = thread_ttl_expiry


def thread_create(*, caller: Caller, thread_id: str | None = None, metadata: dict | None = None,
                  ttl: dict | None = None, if_exists: str = "raise") -> ChatThread:
    """A thread expiring after `ttl`, or the served project's `checkpointer.ttl` default.

    Raises:
        Conflict: the id exists (anyone's: ids are global) and `if_exists` is "raise".
    """
    thread_id = thread_id or str(uuid.uuid4())
    ttl = ttl or thread_ttl_default()
    try:
        with transaction.atomic():
            return chat_services.thread_create(thread_id=thread_id, owner=caller.owner_fields, metadata=metadata,
                                               ttl=ttl)
    except IntegrityError:
        existing = ChatThread.objects.filter(pk=thread_id).first()
    if existing is None:
        raise Conflict(f"Thread with ID {thread_id} could not be created")
    if if_exists == "do_nothing" and chat_services.thread_owned_by(existing, caller):
        return existing
    raise Conflict(f"Thread with ID {thread_id} already exists")


def thread_update(*, thread: ChatThread, metadata: dict | None = None, ttl: dict | None = None,
                  title: Any = _UNSET) -> ChatThread:
    """Merge `metadata` into the thread's; a new `ttl` restarts its clock; a `title` renames it.

    Raises:
        RequestValidationError: a title agentruntime.services.thread_rename refuses (nothing is changed).
    """
    if title is not _UNSET:
        try:
            chat_services.validate_title(title)
        except chat_services.InvalidTitle as exc:
            raise RequestValidationError.single(["body", "title"], str(exc)) from None
    with transaction.atomic():
        if title is not _UNSET:
            thread = chat_services.thread_rename(thread=thread, title=title)
            if not metadata and ttl is None:
                # A rename alone is not an activity: the thread keeps its place in the newest-first list.
                return thread
        return chat_services.thread_update(thread=thread, metadata=metadata, ttl=ttl)


def thread_delete(*, thread: ChatThread) -> None:
    """The thread, its checkpoints, runs, event log and crons; an active run is stopped first."""
    active = ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).first()
    if active is not None:
        async_to_sync(run_stop)(run=active)  # the cancel flag, a local cancel, a bounded wait
    # One transaction (the saver's sync methods use this thread's connection): never half a thread left behind.
    with transaction.atomic():
        get_checkpointer().delete_thread(thread.id)
        Cron.objects.filter(thread_id=thread.id).delete()
        chat_services.thread_delete(thread=thread)


def _graph_metadata(thread: ChatThread) -> dict:
    """What the Agent Server copies from a thread's metadata into the checkpoints a state update writes."""
    graph_id = (thread.metadata or {}).get("graph_id")
    return {"graph_id": graph_id} if graph_id else {}


def thread_state_update(*, caller: Caller, thread_id: str, values: Any = None, as_node: str | None = None,
                        checkpoint: dict | None = None, checkpoint_id: str | None = None) -> dict:
    """Update (or, for a thread nobody has yet, bootstrap as the examples do) the thread's state, from the thread's
    latest checkpoint or the one `checkpoint` (or `checkpoint_id`, which wins) names.

    Raises:
        NotFound: someone else's thread. agentserver.state.InvalidStateRequest: the graph refuses the update.
    """
    checkpoint = dict(checkpoint or {})
    if checkpoint_id:
        checkpoint["checkpoint_id"] = checkpoint_id
    try:
        thread = chat_services.thread_claim(thread_id=thread_id, caller=caller)
    except NotFound:
        raise selectors.thread_not_found(thread_id) from None
    result = state_update(selectors.thread_graph(thread), thread.id, values=values, as_node=as_node,
                          checkpoint=checkpoint or None, metadata=_graph_metadata(thread))
    messages = values.get("messages") if isinstance(values, dict) else None
    chat_services.thread_touch(thread=thread, messages=messages if isinstance(messages, list) else None)
    return result


def thread_expire(*, thread: ChatThread) -> str:
    """Apply an expired thread's TTL strategy and say what was done (`deleted`, `pruned`, `busy`).

    `delete` removes the thread with its runs, event log and checkpoints. `keep_latest` keeps the thread and the
    latest checkpoint of each namespace (what the next run starts from) and restarts the clock, so that a thread in
    use is pruned again one TTL later; a thread with an active run is left for the next sweep.
    """
    if (thread.ttl or {}).get("strategy") != "keep_latest":
        thread_delete(thread=thread)
        return "deleted"
    if ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).exists():
        return "busy"
    with transaction.atomic():
        get_checkpointer().prune([thread.id], strategy="keep_latest")
        chat_services.thread_restart_clock(thread=thread)
    return "pruned"


# --- Chat runs ------------------------------------------------------------------------------------------------
def assistant_for(*, caller: Caller, raw: str) -> Assistant:
    if raw in served_graph_ids():
        key = selectors.system_assistant_id(raw)
    else:
        try:
            key = uuid.UUID(str(raw))
        except ValueError:
            graphs = ", ".join(served_graph_ids())
            raise RequestValidationError.single(
                ["body", "assistant_id"], f"Invalid assistant: '{raw}'. Must be either:\n- A valid assistant UUID, "
                                          f"or\n- One of the registered graphs: {graphs}") from None
    try:
        return selectors.assistant_get(caller=caller, assistant_id=key)
    except NotFound:
        # Only a miss needs the system assistants ensured: every run would otherwise pay a query for it.
        assistants_ensure_system(caller=caller)
    return selectors.assistant_get(caller=caller, assistant_id=key)


def check_run_body(data: dict) -> None:
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


def _new_thread(*, caller: Caller, assistant: Assistant, data: dict) -> tuple[ChatThread, bool, bool]:
    """A stateless run's thread, created as `_remember_graph` would leave it (one statement instead of two);
    (the thread, whether it is temporary, True: the run created it)."""
    thread = chat_services.thread_create(thread_id=str(uuid.uuid4()), owner=caller.owner_fields,
                                         metadata=_graph_marks(assistant), ttl=thread_ttl_default(),
                                         has_state=True, graph_name=assistant.graph_id)
    return thread, data.get("on_completion", "delete") == "delete", True


def _thread_for(*, caller: Caller, thread_id: str, data: dict) -> tuple[ChatThread, bool, bool]:
    """(The run's thread on a given thread id, whether it is temporary (never), whether the run created it.)"""
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None and data.get("if_not_exists") == "create":
        return chat_services.thread_claim(thread_id=thread_id, caller=caller), False, True
    if thread is None or not chat_services.thread_owned_by(thread, caller):
        raise NotFound("Thread or assistant not found.")
    return thread, False, False


def _make_room(*, thread: ChatThread, strategy: str) -> list[ChatRun]:
    """Apply the multitask strategy to the thread's active runs; the running runs now being cancelled."""
    active = list(ChatRun.objects.filter(thread=thread, status__in=selectors.ACTIVE_RUN_STATUSES))
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
    check_run_body(data)
    assistant = assistant_for(caller=caller, raw=str(data["assistant_id"]))
    config, context = _run_config(assistant, data)
    strategy = data.get("multitask_strategy") or "enqueue"
    with transaction.atomic():
        if thread_id is None:
            # A stateless run's own new thread: nothing to lock, no run to make room for, an empty event log.
            thread, temporary, created = _new_thread(caller=caller, assistant=assistant, data=data)
            cancelling, start_seq = [], 0
        else:
            thread, temporary, created = _thread_for(caller=caller, thread_id=thread_id, data=data)
            chat_services.thread_lock(thread=thread)
            cancelling = _make_room(thread=thread, strategy=strategy)
            start_seq = _last_seq(thread)
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
        run = chat_services.run_create(
            thread=thread, run_id=run_id, kind=ChatRun.Kind.AGENT_SERVER, graph_name=assistant.graph_id,
            assistant_id=str(assistant.assistant_id), kwargs=kwargs, metadata=metadata, multitask_strategy=strategy,
            start_seq=start_seq, available_at=timezone.now() + timedelta(seconds=after) if after else None)
        if thread_id is not None:
            _remember_graph(thread=thread, assistant=assistant)
        transaction.on_commit(notify_executors)
    return run, cancelling


def _durability(data: dict) -> str:
    if data.get("durability"):
        return data["durability"]
    return "async" if data.get("checkpoint_during") in (None, True) else "exit"


def _last_seq(thread: ChatThread) -> int:
    return ChatThread.objects.filter(pk=thread.pk).values_list("last_seq", flat=True).get()


def _graph_marks(assistant: Assistant) -> dict:
    return {"graph_id": assistant.graph_id, "assistant_id": str(assistant.assistant_id)}


def _remember_graph(*, thread: ChatThread, assistant: Assistant) -> None:
    """A run adds graph_id and assistant_id to its thread's metadata, as on the Agent Server."""
    chat_services.thread_mark_graph(thread=thread, marks=_graph_marks(assistant), graph_name=assistant.graph_id)


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
    if run.status not in selectors.ACTIVE_RUN_STATUSES:
        return True
    return _cancel_now(run=run, rollback=rollback)


def run_delete(*, run: ChatRun) -> None:
    """Raises Conflict: the run is still active (as the Agent Server refuses it)."""
    if run.status in selectors.ACTIVE_RUN_STATUSES:
        raise Conflict("Cannot delete an active run: cancel it first.")
    run.delete()


def runs_cancel_many(*, caller: Caller, thread_id: str | None, run_ids: list[str] | None, status: str | None,
                     rollback: bool) -> list[ChatRun]:
    """Cancel the caller's matching active runs; the running ones (their processes are asked to stop).

    Raises:
        NotFound: nothing matched.
    """
    rows = ChatRun.objects.filter(thread__in=ChatThread.objects.filter(**caller.owner_filter),
                                  status__in=selectors.ACTIVE_RUN_STATUSES)
    if thread_id:
        rows = rows.filter(thread_id=thread_id)
    if run_ids:
        rows = rows.filter(pk__in=run_ids)
    if status in ("pending", "running"):
        rows = rows.filter(status=selectors.RUN_STATUS_FILTERS[status])
    found = list(rows)
    if not found:
        raise NotFound("No matching runs to cancel. Check that the runs exist and are pending or running.")
    return [run for run in found if not _cancel_now(run=run, rollback=rollback)]

"""Writes of the Agent Server API: assistants (versioned) and chat threads as Agent Server threads."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentserver import selectors
from agentserver.graphs import served_graph_ids
from agentserver.models import Assistant, AssistantVersion
from agentserver.state import state_update
from chat import services as chat_services
from chat.access import Caller
from chat.graph_runtime import get_checkpointer
from chat.models import ChatRun, ChatThread
from core.exceptions import BadRequest, Conflict, NotFound, RequestValidationError

VERSIONED_FIELDS = ("graph_id", "name", "description", "config", "context", "metadata")


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
def _expiry(ttl: dict | None):
    return timezone.now() + timedelta(minutes=ttl["ttl"]) if ttl else None


def thread_create(*, caller: Caller, thread_id: str | None = None, metadata: dict | None = None,
                  ttl: dict | None = None, if_exists: str = "raise") -> ChatThread:
    """Raises Conflict: the id exists (anyone's: ids are global) and `if_exists` is "raise"."""
    thread_id = thread_id or str(uuid.uuid4())
    try:
        with transaction.atomic():
            return ChatThread.objects.create(id=thread_id, **caller.owner_fields, metadata=metadata or {},
                                             ttl=ttl, expires_at=_expiry(ttl))
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
        RequestValidationError: a title chat.services.thread_rename refuses (nothing is changed).
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
        return _thread_update_fields(thread=thread, metadata=metadata, ttl=ttl)


def _thread_update_fields(*, thread: ChatThread, metadata: dict | None, ttl: dict | None) -> ChatThread:
    if metadata:
        thread.metadata = {**thread.metadata, **metadata}
    if ttl is not None:
        thread.ttl, thread.expires_at = ttl, _expiry(ttl)
    thread.save(update_fields=["metadata", "ttl", "expires_at", "updated_at"])
    return thread


def thread_delete(*, thread: ChatThread) -> None:
    """The thread, its checkpoints, runs and event log; an active run is stopped first."""
    active = ChatRun.objects.filter(thread=thread, status=ChatRun.Status.RUNNING).first()
    if active is not None:
        from chat.consumers import stop_run  # the chat protocol's own stop: flag, local cancel, bounded wait

        async_to_sync(stop_run)(active)
    # One transaction (the saver's sync methods use this thread's connection): never half a thread left behind.
    with transaction.atomic():
        get_checkpointer().delete_thread(thread.id)
        chat_services.thread_delete(thread=thread)


@transaction.atomic
def thread_copy(*, thread: ChatThread) -> ChatThread:
    """A new thread of the same owner with the same metadata and a copy of every checkpoint."""
    copy = ChatThread.objects.create(
        id=str(uuid.uuid4()), owner_kind=thread.owner_kind, workspace_id=thread.workspace_id,
        user_id=thread.user_id, title=thread.title, graph_name=thread.graph_name, has_state=thread.has_state,
        metadata=dict(thread.metadata), ttl=thread.ttl, expires_at=_expiry(thread.ttl))
    get_checkpointer().copy_thread(thread.id, copy.id)
    return copy


def _graph_metadata(thread: ChatThread) -> dict:
    """What the Agent Server copies from a thread's metadata into the checkpoints a state update writes."""
    graph_id = (thread.metadata or {}).get("graph_id")
    return {"graph_id": graph_id} if graph_id else {}


def thread_state_update(*, caller: Caller, thread_id: str, values: Any, as_node: str | None,
                        checkpoint: dict | None) -> dict:
    """Update (or, for a thread nobody has yet, bootstrap as the examples do) the thread's state.

    Raises:
        NotFound: someone else's thread. agentserver.state.InvalidStateRequest: the graph refuses the update.
    """
    try:
        thread = chat_services.thread_claim(thread_id=thread_id, caller=caller)
    except NotFound:
        raise selectors.thread_not_found(thread_id) from None
    result = state_update(selectors.thread_graph(thread), thread.id, values=values, as_node=as_node,
                          checkpoint=checkpoint, metadata=_graph_metadata(thread))
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
        ChatThread.objects.filter(pk=thread.pk).update(expires_at=_expiry(thread.ttl))
    return "pruned"

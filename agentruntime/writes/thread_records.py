"""Writes of chat threads: creating, copying, updating, titling and deleting them, and who owns one."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agentruntime import thread_ttl
from agentruntime.access import Caller
from agentruntime.models import ChatEvent, ChatRun, ChatThread
from core.exceptions import NotFound

MAX_THREAD_ID_LENGTH = 255
# Automatic titles stay short enough to tell threads apart in the sidebar; a title given by the user may use the
# whole column.
TITLE_LENGTH = 48
TITLE_MAX_LENGTH = cast(int, ChatThread._meta.get_field("title").max_length)  # a CharField: always set


class InvalidTitle(ValueError):
    pass


def thread_not_found(thread_id: str) -> NotFound:
    return NotFound(f"Thread {thread_id} not found")


def thread_claim(*, thread_id: str, caller: Caller) -> ChatThread:
    """The caller's thread `thread_id`, created for them when nobody has it yet.

    Raises:
        NotFound: the thread belongs to someone else (the same answer as for a missing thread elsewhere).
    """
    if not thread_id or len(thread_id) > MAX_THREAD_ID_LENGTH or "\x00" in thread_id:
        # A NUL names nothing that can be stored (core/json_input.py): the same answer on both databases.
        raise thread_not_found(thread_id[:MAX_THREAD_ID_LENGTH].replace("\x00", "\\u0000"))
    thread = ChatThread.objects.filter(pk=thread_id).first()
    if thread is None:
        try:
            with transaction.atomic():
                return ChatThread.objects.create(id=thread_id, **caller.owner_fields, **thread_ttl.default_fields())
        except IntegrityError:
            # Two first requests raced; whoever won owns it.
            thread = ChatThread.objects.get(pk=thread_id)
    if not thread_owned_by(thread, caller):
        raise thread_not_found(thread_id)
    return thread


def thread_owned_by(thread: ChatThread, caller: Caller) -> bool:
    owner = caller.owner_filter
    return (thread.owner_kind == owner["owner_kind"] and thread.workspace_id == owner["workspace_id"]
            and thread.user_id == owner["user_id"])


def thread_create(*, thread_id: str, owner: dict, metadata: dict | None = None, ttl: dict | None = None,
                  **fields: Any) -> ChatThread:
    """A new thread of `owner` (a Caller's owner_fields), expiring after `ttl` (none: never); `fields` are
    ChatThread's others (graph_name, has_state, title).

    Raises:
        IntegrityError: the id exists (anyone's: ids are global).
    """
    return ChatThread.objects.create(id=thread_id, **owner, metadata=metadata or {}, ttl=ttl,
                                     expires_at=thread_ttl.expiry(ttl), **fields)


@transaction.atomic
def thread_copy(*, thread: ChatThread) -> ChatThread:
    """A new thread of the same owner with the same title, metadata and TTL (its clock restarted) and a copy of every
    checkpoint."""
    from agentruntime.checkpointer.saver import get_checkpointer

    copy = thread_create(thread_id=str(uuid.uuid4()), owner=_owner_fields(thread), metadata=dict(thread.metadata),
                         ttl=thread.ttl, title=thread.title, graph_name=thread.graph_name, has_state=thread.has_state)
    get_checkpointer().copy_thread(thread.id, copy.id)
    return copy


def _owner_fields(thread: ChatThread) -> dict:
    return {"owner_kind": thread.owner_kind, "workspace_id": thread.workspace_id, "user_id": thread.user_id}


def thread_update(*, thread: ChatThread, metadata: dict | None = None, ttl: dict | None = None) -> ChatThread:
    """Merge `metadata` into the thread's; a new `ttl` restarts its clock."""
    if metadata:
        thread.metadata = {**thread.metadata, **metadata}
    if ttl is not None:
        thread.ttl, thread.expires_at = ttl, thread_ttl.expiry(ttl)
    thread.save(update_fields=["metadata", "ttl", "expires_at", "updated_at"])
    return thread


def thread_restart_clock(*, thread: ChatThread) -> None:
    """The thread expires one TTL from now (its checkpoints were just pruned to the latest)."""
    ChatThread.objects.filter(pk=thread.pk).update(expires_at=thread_ttl.expiry(thread.ttl))


def thread_mark_graph(*, thread: ChatThread, marks: dict, graph_name: str) -> None:
    """Merge `marks` into the thread's metadata and remember the graph its runs use (the thread has state now)."""
    metadata = {**(thread.metadata or {}), **marks}
    ChatThread.objects.filter(pk=thread.pk).update(metadata=metadata, has_state=True, graph_name=graph_name,
                                                   updated_at=timezone.now())
    thread.metadata = metadata


def thread_lock(*, thread: ChatThread) -> None:
    """Hold the thread's row until the transaction ends: runs of one thread are admitted one at a time."""
    ChatThread.objects.select_for_update().filter(pk=thread.pk).first()


def thread_touch(*, thread: ChatThread, messages: Sequence | None = None, graph_name: str | None = None) -> None:
    """Mark that the thread has state now, title it after its first human message, and remember the graph its
    run uses (`graph_name`, when given)."""
    fields = {"has_state": True, "updated_at": timezone.now()}
    if graph_name is not None:
        fields["graph_name"] = graph_name
    if not thread.title:
        title = title_from_messages(messages or [])
        if title:
            fields["title"] = title
    ChatThread.objects.filter(pk=thread.pk).update(**fields)
    for name, value in fields.items():
        setattr(thread, name, value)


def title_from_messages(messages: Sequence) -> str:
    for message in messages:
        kind = message.get("type") or message.get("role") if isinstance(message, dict) else getattr(
            message, "type", None)
        if kind not in ("human", "user"):
            continue
        content = message.get("content") if isinstance(message, dict) else message.content
        if isinstance(content, list):
            content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
        text = shorten_title(str(content or ""))
        if text:
            return text
    return ""


def shorten_title(text: str, limit: int = TITLE_LENGTH) -> str:
    """`text` on one line, cut at the last word boundary that fits in `limit` characters (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if " " in cut and text[limit - 1] != " ":
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:.-–—") + "…"


def validate_title(title: object) -> str:
    """The title with its whitespace collapsed. Raises InvalidTitle: not a string, blank, or too long."""
    if not isinstance(title, str):
        raise InvalidTitle("title must be a string.")
    cleaned = " ".join(title.split())
    if not cleaned:
        raise InvalidTitle("title must not be blank.")
    if len(cleaned) > TITLE_MAX_LENGTH:
        raise InvalidTitle(f"title must be at most {TITLE_MAX_LENGTH} characters long (it has {len(cleaned)}).")
    return cleaned


def thread_rename(*, thread: ChatThread, title: object) -> ChatThread:
    """Give the thread the user's own title (whitespace collapsed).

    Raises:
        InvalidTitle: not a string, blank, or longer than the title column.
    """
    cleaned = validate_title(title)
    # Not an activity: the thread keeps its place in the newest-first list.
    thread.title = cleaned
    ChatThread.objects.filter(pk=thread.pk).update(title=cleaned)
    return thread


@transaction.atomic
def thread_delete(*, thread: ChatThread) -> None:
    """Remove the thread's runs and event log (its checkpoints are the checkpointer's to delete)."""
    thread_delete_by_id(thread_id=thread.pk)


def thread_delete_by_id(*, thread_id: str) -> None:
    """`thread_delete` without reading the thread first (nothing happens when it is gone). Call it in a transaction:
    its statements belong together."""
    ChatRun.objects.filter(thread_id=thread_id, status=ChatRun.Status.RUNNING).update(
        cancel_requested_at=timezone.now())
    # Three statements, children first, where Django's cascade takes five (it reads the runs to delete their events,
    # which are the thread's events anyway). ChatEvent and ChatRun are the only tables that refer to threads and
    # runs; the database's foreign keys would refuse to leave a row behind.
    with connection.cursor() as cursor:
        for sql in _THREAD_DELETE_SQL:
            cursor.execute(sql, [thread_id])


_THREAD_DELETE_SQL = (f"DELETE FROM {ChatEvent._meta.db_table} WHERE thread_id = %s",
                      f"DELETE FROM {ChatRun._meta.db_table} WHERE thread_id = %s",
                      f"DELETE FROM {ChatThread._meta.db_table} WHERE id = %s")


_chat_workspace_id: uuid.UUID | None = None


def chat_workspace_id() -> uuid.UUID:
    """CHAT_WORKSPACE's id (created when missing): where browser and anonymous threads are traced."""
    global _chat_workspace_id
    if _chat_workspace_id is None:
        from accounts.services import workspace_get_or_create

        _chat_workspace_id = workspace_get_or_create(name=settings.CHAT_WORKSPACE).id
    return _chat_workspace_id


def thread_id_segment_problem(segment: str) -> str | None:
    """Why `segment` (a path segment, percent-decoded) can name no thread, or None when it can."""
    if not segment or "/" in segment or segment in (".", "..") or len(segment) > MAX_THREAD_ID_LENGTH:
        return (f"Invalid thread id: a thread id has 1 to {MAX_THREAD_ID_LENGTH} characters, contains no '/' "
                f"and is not '.' or '..'.")
    return None

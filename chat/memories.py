"""What the deep agent remembers for one owner: its /memories/ files in the owner's store (chat/agent/memory.py).

One read and one write, for the chat page's Memory panel (chat/api_memories.py). They live here rather than in
selectors.py and services.py because both work on the store's rows as deepagents lays them out, which nothing else
in the chat needs to know. Only the files the agent's tools see are entries: items of MEMORY_NAMESPACE whose key is a
path ("/facts.md"); an item the Agent Server's /store routes put there under another key is not one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from agentruntime.models import StoreItem
from agentruntime.selectors import namespace_text
from chat.agent.memory import MEMORY_NAMESPACE, MEMORY_ROUTE
from core.exceptions import NotFound

MAX_ENTRIES = 1000


@dataclass(frozen=True)
class MemoryEntry:
    name: str  # the file's path below /memories/ ("facts.md")
    content: str
    created_at: datetime
    updated_at: datetime

    @property
    def path(self) -> str:
        return MEMORY_ROUTE + self.name


def _memory_rows(scope: str) -> QuerySet[StoreItem]:
    return StoreItem.objects.filter(scope=scope, namespace=namespace_text(MEMORY_NAMESPACE), key__startswith="/")


def memory_list(*, scope: str) -> list[MemoryEntry]:
    """The owner's memory files (at most MAX_ENTRIES), by name."""
    return [_entry(row) for row in _memory_rows(scope).order_by("key")[:MAX_ENTRIES]]


def memory_delete(*, scope: str, name: str) -> None:
    """Forget one memory file of the owner: the agent no longer finds it, in any thread.

    Raises:
        NotFound: the owner has no memory file of that name (another owner's is never found).
    """
    deleted, _ = _memory_rows(scope).filter(key="/" + name).delete()
    if not deleted:
        raise NotFound(f"No memory named '{name}'.")


def _entry(row: StoreItem) -> MemoryEntry:
    content = row.value.get("content") if isinstance(row.value, dict) else None
    if isinstance(content, list):  # deepagents' older layout: a list of lines
        content = "\n".join(str(line) for line in content)
    return MemoryEntry(name=row.key[1:], content=content if isinstance(content, str) else "",
                       created_at=row.created_at, updated_at=row.updated_at)

"""The deep agent's long-term memory: files under /memories/, kept in the thread owner's LangGraph store.

deepagents' file tools (`ls`, `read_file`, `write_file`, ...) work on a CompositeBackend: paths under /memories/ go
to a StoreBackend, every other path stays in the thread's own state as before. The StoreBackend has no store of its
own: it takes the run's (`get_store()`), which agentruntime/runs/execution.py binds to the thread owner's DjangoStore.
So a file the coordinator writes there is read back in the owner's later threads, and no other owner's store holds it.

In the store, a memory file is an item of MEMORY_NAMESPACE whose key is its path below the route ("/facts.md" for
"/memories/facts.md") and whose value is deepagents' file data (`content`, `encoding`, `created_at`, `modified_at`).

The rest of this module is how the offline scripted model (chat/agent/scripted.py) reads a request for memory: a fact
to remember ("remember that my favourite number is 7") or a question about the user ("what is my favourite number?").
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

MEMORY_ROUTE = "/memories/"
MEMORY_NAMESPACE = ("memories",)

MEMORY_PROMPT = (
    "\n\nYou have a long-term memory: files under /memories/ persist across this user's conversations, while every "
    "other path lasts for one conversation only. When the user asks you to remember something, save it with "
    "write_file under /memories/ (one short file per fact). When a request depends on what you know about the user, "
    "look in /memories/ first (ls, then read_file)."
)


class RunStoreBackend(StoreBackend):
    """deepagents' StoreBackend on the run's store. A run without one (a bare `invoke`, a host that configures no
    store) gets a store of this process instead of failing the tool call: memory then lasts as long as the process."""

    def __init__(self) -> None:
        super().__init__(namespace=lambda _runtime: MEMORY_NAMESPACE)
        self._fallback: BaseStore | None = None

    def _get_store(self) -> BaseStore:
        store = super()._get_store()
        if store is not None:
            return store
        if self._fallback is None:
            self._fallback = InMemoryStore()
        return self._fallback


def memory_backend() -> CompositeBackend:
    """deepagents' filesystem for the deep agent: /memories/ in the run's store, the rest in the thread's state."""
    return CompositeBackend(default=StateBackend(), routes={MEMORY_ROUTE: RunStoreBackend()})


# --- how the scripted model reads a request for memory --------------------------------------------------------------

_REMEMBER = re.compile(
    r"^\s*(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+)?(?:remember|memori[sz]e|note|keep\s+in\s+mind|"
    r"don't\s+forget)\b[\s,:]*(?:that\s+)?(?P<fact>.+?)[\s.!]*$",
    re.IGNORECASE | re.DOTALL,
)
# About the user, not merely phrased in the first person ("tell me about X", "how do I ..." are lookups).
_ABOUT_THE_USER = re.compile(r"\b(?:my|mine|myself|about\s+me|who\s+am\s+i)\b", re.IGNORECASE)
_ASKS = re.compile(r"^\s*(?:who|what|when|where|which|how|is|are|do|does|did|can|tell)\b|\?\s*$", re.IGNORECASE)
_COPULA = re.compile(r"^(?P<subject>.+?)\s+(?:is|are|was|were)\s+(?P<value>.+)$", re.IGNORECASE | re.DOTALL)
_QUESTION_SUBJECT = re.compile(
    r"^\s*(?:(?:who|what|when|where|which)\s+(?:is|are|was|were)|(?:do|did)\s+you\s+(?:remember|know)\s+(?:what\s+)?|"
    r"tell\s+me\s+)\s*(?P<subject>.+?)(?:\s+(?:is|are|was|were))?[\s?.!]*$",
    re.IGNORECASE,
)
_OWNERS = {"my", "the", "our", "a", "an"}
_SECOND_PERSON = [(r"\bI\s+am\b", "you are"), (r"\bI'm\b", "you're"), (r"\bmy\b", "your"), (r"\bmine\b", "yours"),
                  (r"\bmyself\b", "yourself"), (r"\bme\b", "you"), (r"\bI\b", "you")]
# What read_file adds to a file's lines: a "@@ lines 1-3 of 3 @@" header, or numbers before each line.
_READ_MARKUP = re.compile(r"^@@ [^\n]* @@\n?|^\s*\d+\t", re.MULTILINE)


@dataclass(frozen=True)
class Remember:
    """A fact to save: in /memories/<slug>.md, where a later fact about the same subject replaces it."""

    fact: str

    @property
    def path(self) -> str:
        return f"{MEMORY_ROUTE}{slug(subject_of(self.fact))}.md"


@dataclass(frozen=True)
class Recall:
    """A question about the user: `subject` ("my favourite number"), or "" for everything remembered."""

    subject: str


def memory_request(text: str, *, has_arithmetic: bool) -> Remember | Recall | None:
    """What the request asks of the memory, if anything: a fact to remember, or a question about the user."""
    found = _REMEMBER.match(text or "")
    if found and found.group("fact").strip():
        return Remember(fact=found.group("fact").strip())
    if has_arithmetic or not _ABOUT_THE_USER.search(text or "") or not _ASKS.search(text or ""):
        return None
    if re.search(r"\bremember\b|\bknow\b", text, re.IGNORECASE) and re.search(r"\babout\s+me\b|^\s*what\s+do\s+you",
                                                                                text, re.IGNORECASE):
        return Recall(subject="")
    question = _QUESTION_SUBJECT.match(text)
    return Recall(subject=question.group("subject").strip() if question else "")


def subject_of(fact: str) -> str:
    """What a fact is about: "my favourite number" for "my favourite number is 7", else the fact itself."""
    found = _COPULA.match(fact.strip())
    return found.group("subject") if found else fact


def slug(text: str) -> str:
    """A file name for a subject: lower-case words joined by hyphens, without a leading "my" or "the"."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    while len(words) > 1 and words[0] in _OWNERS:
        words = words[1:]
    return "-".join(words[:8]) or "note"


def second_person(text: str) -> str:
    """The user's words as said back to them: "my favourite number is 7" → "your favourite number is 7"."""
    for pattern, replacement in _SECOND_PERSON:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text


def listed_paths(ls_output: str) -> list[str]:
    """The memory files an `ls` of /memories/ listed (its answer is a Python list of paths, or "No files found")."""
    try:
        paths = ast.literal_eval(ls_output.strip())
    except (ValueError, SyntaxError):
        return []
    if not isinstance(paths, list):
        return []
    return [p for p in paths if isinstance(p, str) and p.startswith(MEMORY_ROUTE) and not p.endswith("/")]


def file_text(read_output: str) -> str:
    """A file's text from `read_file`'s answer, without the markup it adds."""
    return _READ_MARKUP.sub("", read_output).strip().rstrip(".")


def recalled(subject: str, files: dict[str, str]) -> list[str]:
    """The remembered facts that answer a question about `subject` (all of them when it is blank)."""
    facts = [text for text in files.values() if text]
    if not subject:
        return facts
    wanted = slug(subject)
    exact = [text for path, text in files.items() if text and path.rsplit("/", 1)[-1] == f"{wanted}.md"]
    if exact:
        return exact
    words = set(wanted.split("-"))
    return [text for text in facts if words <= set(slug(text).split("-"))]

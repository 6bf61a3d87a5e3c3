"""A run's `command` (the Agent Server's `resume`, `update` and `goto`; `input.respond`'s resume) as LangGraph's
Command: how any kind of run resumes or redirects its graph."""

from __future__ import annotations

from langgraph.types import Command, Send


def command_from(raw: dict | None) -> Command | None:
    if not raw:
        return None
    goto = raw.get("goto")
    if goto is not None and not isinstance(goto, list):
        goto = [goto]
    update = raw.get("update")
    if isinstance(update, list) and all(isinstance(t, list | tuple) and len(t) == 2 and isinstance(t[0], str)
                                        for t in update):
        update = [tuple(t) for t in update]
    targets = [g if isinstance(g, str) else Send(g["node"], g.get("input")) for g in goto] if goto else None
    return Command(update=update, goto=targets or None, resume=raw.get("resume"))

"""How the scripted model reads a tool result a person reviewed (LangChain's HumanInTheLoopMiddleware).

A rejected call comes back as an error ToolMessage marked `hitl_interrupt_decision`; an edited call's result starts
with the middleware's notice naming the arguments that ran ("Executed instead: <tool> with arguments {...}.").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage

_EXECUTED = re.compile(r"Executed instead: \S+ with arguments ")
_RESPONSE_MARK = "Tool response:"
_REASON = re.compile(r"with reason: (.*)\Z", re.DOTALL)


@dataclass
class Review:
    text: str
    rejected: bool = False
    reason: str = ""
    # The arguments a person's edit ran the tool with (empty when the model's own call ran).
    executed_args: dict[str, Any] = field(default_factory=dict)

    def rejection(self) -> str:
        return f"you rejected the call ({self.reason})" if self.reason else "you rejected the call"


def review_of(message: ToolMessage) -> Review:
    text = _text(message)
    decision = (message.additional_kwargs.get("lc_data") or {}).get("decision") \
        if message.additional_kwargs.get("lc_source") == "hitl_interrupt_decision" else None
    if decision == "reject":
        found = _REASON.search(text)
        return Review(text=text, rejected=True, reason=found.group(1).strip() if found else "")
    match = _EXECUTED.search(text)
    if match is None:
        return Review(text=text)
    try:
        args, end = json.JSONDecoder().raw_decode(text, match.end())
    except ValueError:
        return Review(text=text)
    rest = text[end:]
    mark = rest.find(_RESPONSE_MARK)
    result = rest[mark + len(_RESPONSE_MARK):].lstrip("\n") if mark >= 0 else ""
    return Review(text=result, executed_args=args if isinstance(args, dict) else {})


def _text(message: ToolMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(block if isinstance(block, str) else str(block.get("text", "")) for block in message.content
                     if isinstance(block, str | dict))

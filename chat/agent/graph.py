"""The deep agent: a coordinator with no tools of its own, a `researcher` and a `math-whiz` subagent.

Its files under /memories/ are its long-term memory, kept in the thread owner's store (chat/agent/memory.py).

Tool calls the turn's approval list names (chat/agent/approvals.py) wait for a person's decision, in the coordinator
and inside each subagent.

`build_graph(checkpointer)` is what CHAT_GRAPH names by default (`chat.agent.graph:build_graph`).
"""

from __future__ import annotations

import os
from typing import Any

from deepagents import create_deep_agent

from chat.agent.approvals import ApprovalPolicy, interrupt_on
from chat.agent.language_models import build_models
from chat.agent.memory import MEMORY_PROMPT, memory_backend
from chat.agent.prompts import (
    COORDINATOR_PROMPT,
    MATH_DESCRIPTION,
    MATH_NAME,
    MATH_PROMPT,
    RESEARCHER_DESCRIPTION,
    RESEARCHER_NAME,
    RESEARCHER_PROMPT,
)
from chat.agent.tools import calculator, search_web


def build_graph(checkpointer: Any = None, *, model: str | None = None):
    """Compile the deep agent around `checkpointer`; `model` defaults to CHAT_MODEL."""
    spec = os.environ.get("CHAT_MODEL", "") if model is None else model
    coordinator, researcher, math_whiz = build_models(spec.strip())
    return create_deep_agent(
        model=coordinator,
        tools=[],
        system_prompt=COORDINATOR_PROMPT + MEMORY_PROMPT,
        subagents=[
            {"name": RESEARCHER_NAME, "description": RESEARCHER_DESCRIPTION, "system_prompt": RESEARCHER_PROMPT,
             "tools": [search_web], "model": researcher, "middleware": [ApprovalPolicy()]},
            {"name": MATH_NAME, "description": MATH_DESCRIPTION, "system_prompt": MATH_PROMPT,
             "tools": [calculator], "model": math_whiz, "middleware": [ApprovalPolicy()]},
        ],
        middleware=[ApprovalPolicy()],
        interrupt_on=interrupt_on([search_web.name, calculator.name]),
        backend=memory_backend(),
        checkpointer=checkpointer,
    )

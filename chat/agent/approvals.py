"""Which tool calls wait for a person's approval: CHAT_APPROVE_TOOLS, or the run's `approve_tools` configurable.

deepagents' `interrupt_on` (LangChain's HumanInTheLoopMiddleware) guards tools by name, fixed when the graph is
built; a `when` predicate decides per call. The decision must be the same when the run resumes (a predicate that
turns false on resume skips the answer and runs the tool, even a rejected one), so the list is taken once per turn,
when the agent starts, and kept in the agent's state: a resume without the first run's config, or a subagent started
after an approval, follows the turn's list.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, InterruptOnConfig
from langchain.agents.middleware.types import OmitFromOutput
from langgraph.config import get_config

from core.env import env_list

# Every decision LangChain's middleware defines: approve, edit (new arguments), reject (with a message the agent
# sees), respond (the person answers in the tool's place).
DECISIONS: list = ["approve", "edit", "reject", "respond"]
# deepagents' own tools besides ours: "*" guards them too.
BUILT_IN_TOOLS = ("task", "write_todos", "ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute")
STATE_KEY = "approve_tools"
CONFIG_KEY = "approve_tools"


def configured_tools() -> list[str]:
    """CHAT_APPROVE_TOOLS: the settings' list in the server, the environment's elsewhere (a graph check)."""
    from django.conf import settings

    if settings.configured:
        return list(getattr(settings, "CHAT_APPROVE_TOOLS", []))
    return env_list("CHAT_APPROVE_TOOLS") if "CHAT_APPROVE_TOOLS" in os.environ else []


def requested_tools(configurable: dict[str, Any]) -> list[str]:
    """The run's own list (`approve_tools`: names, a comma-separated string, `*`, true or false), else the setting's."""
    value = configurable.get(CONFIG_KEY)
    if value is None:
        return configured_tools()
    if isinstance(value, bool):
        return ["*"] if value else []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        raise ValueError(f"configurable.{CONFIG_KEY} must be a list of tool names, a comma-separated string, '*', "
                         f"true or false.")
    return [str(name).strip() for name in value if str(name).strip()]


def guarded(tool_name: str, tools: list[str] | None) -> bool:
    if not tools:
        return False
    return "*" in tools or tool_name in tools


class ApprovalState(AgentState[Any]):
    # Passed to a subagent with the rest of the state (its turn follows the coordinator's), never shown in values.
    # (mypy skips langchain, pyproject.toml, so it cannot see that AgentState is a TypedDict.)
    approve_tools: NotRequired[Annotated[list[str], OmitFromOutput]]  # type: ignore[valid-type]


class ApprovalPolicy(AgentMiddleware):
    """Takes the turn's list of guarded tools when the agent starts; a subagent keeps the one it was given."""

    state_schema = ApprovalState

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        configurable = get_config().get("configurable") or {}
        if configurable.get("ls_agent_type") == "subagent" and state.get(STATE_KEY) is not None:
            return None
        tools = requested_tools(configurable)
        # Written only when it guards something (or ends an earlier turn's list): without approvals the state, and
        # the values clients see, stay as they were.
        return {STATE_KEY: tools} if tools or state.get(STATE_KEY) else None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)


def _when(request: Any) -> bool:
    tools = request.state.get(STATE_KEY)
    if tools is None:  # a turn started before approvals existed
        tools = requested_tools(get_config().get("configurable") or {})
    return guarded(request.tool_call["name"], tools)


def interrupt_on(tool_names: list[str]) -> dict[str, bool | InterruptOnConfig]:
    """deepagents' `interrupt_on` for these tools and deepagents' own, each asked only when the turn's list says so."""
    names = dict.fromkeys([*tool_names, *BUILT_IN_TOOLS])
    return {name: InterruptOnConfig(allowed_decisions=list(DECISIONS), when=_when) for name in names}

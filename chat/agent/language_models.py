"""Which chat models the agent uses: CHAT_MODEL's provider model, or the offline scripted one.

Kept apart from graph.py (deepagents). The configuration check reads chat/agent/providers.py, which imports no
LangChain.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agentruntime.selectors import ConfigurationError
from chat.agent.providers import missing_provider_key, model_provider
from chat.agent.scripted import ScriptedChatModel


class ModelConfigurationError(ConfigurationError):
    """CHAT_MODEL names a model that cannot be used as configured (for example, its key is missing)."""


class UnavailableChatModel(BaseChatModel):
    """Stands in for a model that cannot be built, so the graph (and thread state) still works.

    Every call raises the configuration error, which ends the run with a root `failed` event naming the fix.
    """

    reason: str

    @property
    def _llm_type(self) -> str:
        return "unavailable"

    def bind_tools(self, tools, **kwargs) -> UnavailableChatModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise ModelConfigurationError(self.reason)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        raise ModelConfigurationError(self.reason)


def build_models(spec: str | None) -> tuple[BaseChatModel, BaseChatModel, BaseChatModel]:
    """Coordinator, researcher and math-whiz models: the scripted ones when `spec` is empty.

    A missing provider key gives models that fail every call with a message naming the variable to set: no silent
    fallback to the scripted model.
    """
    if not spec:
        return (ScriptedChatModel(role="coordinator"), ScriptedChatModel(role="researcher"),
                ScriptedChatModel(role="math-whiz"))
    variable = missing_provider_key(spec)
    if variable:
        reason = (f"CHAT_MODEL is {spec!r} but {variable} is not set: set {variable} in the server's environment, "
                  f"or unset CHAT_MODEL to use the offline scripted model.")
        return UnavailableChatModel(reason=reason), UnavailableChatModel(reason=reason), UnavailableChatModel(
            reason=reason)
    from langchain.chat_models import init_chat_model

    if model_provider(spec) == "openai":
        # Reasoning summaries need the Responses API; the subagents stay on chat completions on purpose
        # (the Responses API replays reasoning item ids, which the examples found to break subagent turns).
        coordinator = init_chat_model(spec, reasoning={"effort": "low", "summary": "auto"}, use_responses_api=True)
        return coordinator, init_chat_model(spec, use_responses_api=False), init_chat_model(spec,
                                                                                           use_responses_api=False)
    return init_chat_model(spec), init_chat_model(spec), init_chat_model(spec)

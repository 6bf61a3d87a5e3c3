"""Which chat models the agent uses: CHAT_MODEL's provider model, or the offline scripted one.

Kept apart from graph.py so that checking the configuration does not import deepagents.
"""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from chat.agent.scripted import ScriptedChatModel

# Which environment variable holds each provider's key, so a missing key is named instead of guessed.
PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "xai": "XAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


class ModelConfigurationError(RuntimeError):
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


def model_provider(spec: str) -> str:
    provider, sep, _ = spec.partition(":")
    if not sep:
        from langchain.chat_models.base import _attempt_infer_model_provider

        return _attempt_infer_model_provider(spec) or ""
    return provider


def missing_provider_key(spec: str) -> str | None:
    """The environment variable CHAT_MODEL's provider needs and that is unset, if any."""
    variable = PROVIDER_KEYS.get(model_provider(spec))
    if variable and not os.environ.get(variable):
        return variable
    return None


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

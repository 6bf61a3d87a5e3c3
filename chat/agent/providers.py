"""Which provider a CHAT_MODEL names and which key it needs: what the configuration check reads.

Apart from models.py so that the check (run by every management command, the worker's included) does not
import LangChain.
"""

from __future__ import annotations

import os

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

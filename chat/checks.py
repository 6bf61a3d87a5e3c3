"""Startup checks of the chat's configuration (`manage.py check`, and every management command)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def chat_configuration(app_configs, **kwargs):
    from chat.agent.providers import missing_provider_key

    problems = []
    if settings.CHAT_MODEL:
        variable = missing_provider_key(settings.CHAT_MODEL)
        if variable:
            problems.append(Warning(
                f"CHAT_MODEL is {settings.CHAT_MODEL!r} but {variable} is not set: every chat run will fail.",
                hint=f"Set {variable}, or unset CHAT_MODEL to use the offline scripted model.", id="chat.W001"))
    module, sep, attr = settings.CHAT_GRAPH.rpartition(":")
    if not sep or not module or not attr:
        problems.append(Error(f"CHAT_GRAPH {settings.CHAT_GRAPH!r} must look like 'package.module:attr' or "
                              f"'./path.py:attr'.", id="chat.E001"))
    if settings.CHAT_EVENT_RETENTION < 1 or settings.CHAT_MAX_STREAMS < 1:
        problems.append(Error("CHAT_EVENT_RETENTION and CHAT_MAX_STREAMS must be at least 1.", id="chat.E002"))
    if settings.CHAT_REPLAY_SCOPE not in ("thread", "run"):
        problems.append(Error(f"CHAT_REPLAY_SCOPE must be 'thread' or 'run', not {settings.CHAT_REPLAY_SCOPE!r}.",
                              id="chat.E003"))
    return problems

from __future__ import annotations

from django.apps import AppConfig


class AgentRuntimeConfig(AppConfig):
    """The agent runtime: threads, runs and their queue and executor, the event log, the checkpointer and the store.

    Its models kept the tables they had when they were the chat app's (`chat_*`): the move changed no data.
    """

    name = "agentruntime"
    verbose_name = "Agent runtime"

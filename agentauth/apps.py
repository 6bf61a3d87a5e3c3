from __future__ import annotations

from django.apps import AppConfig


class AgentauthConfig(AppConfig):
    name = "agentauth"
    verbose_name = "OAuth auth service"

    def ready(self) -> None:
        from agentauth import checks  # noqa: F401 - registers the system checks

from __future__ import annotations

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self) -> None:
        from chat import checks  # noqa: F401 - registers the system checks
        from chat.run_kind import register_protocol_runs

        register_protocol_runs()

from django.apps import AppConfig


class AgentServerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agentserver"
    verbose_name = "Agent Server API"

    def ready(self) -> None:
        from agentserver.run_kind import register_agent_server_runs

        register_agent_server_runs()

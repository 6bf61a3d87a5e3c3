from django.apps import AppConfig


class AgentServerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agentserver"
    verbose_name = "Agent Server API"

    def ready(self) -> None:
        from chat.models import ChatRun
        from chat.runs.kinds import after_run

        after_run(ChatRun.Kind.AGENT_SERVER, "agentserver.after_run.call_webhook")
        after_run(ChatRun.Kind.AGENT_SERVER, "agentserver.after_run.remove_temporary_thread")

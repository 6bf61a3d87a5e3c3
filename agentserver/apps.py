from django.apps import AppConfig


class AgentServerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agentserver"
    verbose_name = "Agent Server API"

    def ready(self) -> None:
        from chat.runs.hooks import after_run

        after_run("agentserver.after_run.call_webhook")
        after_run("agentserver.after_run.remove_temporary_thread")

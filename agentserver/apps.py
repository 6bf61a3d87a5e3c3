from django.apps import AppConfig


class AgentServerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agentserver"
    verbose_name = "Agent Server API"

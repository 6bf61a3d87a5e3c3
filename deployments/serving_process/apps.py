from __future__ import annotations

from django.apps import AppConfig


class ServingProcessConfig(AppConfig):
    name = "deployments.serving_process"
    label = "serving_process"
    verbose_name = "Revision serving process"

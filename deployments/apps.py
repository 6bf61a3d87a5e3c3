from __future__ import annotations

from django.apps import AppConfig


class DeploymentsConfig(AppConfig):
    name = "deployments"

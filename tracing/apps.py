from __future__ import annotations

from django.apps import AppConfig


class TracingConfig(AppConfig):
    name = "tracing"

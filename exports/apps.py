from __future__ import annotations

from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"

    def ready(self) -> None:
        from exports import logredact

        logredact.install()

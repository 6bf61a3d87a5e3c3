from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Service core"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        # Each app registers its background job handlers and periodic jobs in `<app>/jobs.py`.
        autodiscover_modules("jobs")

from __future__ import annotations

from django.apps import AppConfig


class ServingProcessConfig(AppConfig):
    """serve_graphs and check_graphs, in the service (which can run them too) and in a serving process."""

    default = True
    name = "deployments.serving"
    label = "serving"
    verbose_name = "Revision serving process"


class LeanServingProcessConfig(ServingProcessConfig):
    """The same, in a serving process: installed first, it imports the libraries without their unused extras
    (lean.py) before the other apps' ready() import them with."""

    default = False

    def ready(self) -> None:
        from django.conf import settings

        from deployments.serving import lean

        lean.import_libraries(sqlite=settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3")

from __future__ import annotations

from django.apps import AppConfig


class DestinationsConfig(AppConfig):
    """Destinations keep the label `exports`: their tables, migrations, admin pages and permissions stay as they
    were before bulk exports moved into an app of their own (exports.bulk_exports)."""

    name = "exports.destinations"
    label = "exports"
    verbose_name = "Export destinations"

    def ready(self) -> None:
        from exports import logredact

        logredact.install()

from __future__ import annotations

from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"

    def ready(self) -> None:
        from exports import export_selectors, logredact

        logredact.install()
        # Destinations refuse deletion (409) and keep credential versions while exports use them.
        export_selectors.register_usage()

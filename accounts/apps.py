from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Workspaces and API keys"

    def ready(self) -> None:
        from accounts import (
            bootstrap,  # noqa: F401 - registers what `serve` sets up
            schema,  # noqa: F401 - registers the OpenAPI security scheme
        )

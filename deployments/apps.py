from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig
from django.core import checks


class DeploymentsConfig(AppConfig):
    name = "deployments"

    def ready(self) -> None:
        checks.register(check_git_roots)


def check_git_roots(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """DEPLOY_GIT_ALLOWED_ROOTS must be absolute paths: a relative one would depend on the working directory."""
    from django.conf import settings

    return [
        checks.Error(f"DEPLOY_GIT_ALLOWED_ROOTS entry {root!r} is not an absolute path.", id="deployments.E001")
        for root in getattr(settings, "DEPLOY_GIT_ALLOWED_ROOTS", []) if not Path(root).is_absolute()
    ]

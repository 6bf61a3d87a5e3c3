"""App configs of third-party apps: the admin with this project's own site, and Daphne without its server."""

from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class ServiceAdminConfig(AdminConfig):
    default_site = "config.admin_site.ServiceAdminSite"


class DaphneConfig(AppConfig):
    """Daphne's app, for its ASGI `runserver`, without its server.

    Daphne's own config imports daphne.server (Twisted, about 15 MiB) in every process that sets Django up:
    workers and management commands never serve HTTP. `runserver` imports the server when it is run, and the
    Daphne processes (`python -m daphne`) import it before Django.
    """

    name = "daphne"
    verbose_name = "Daphne"

"""The admin app with this project's own site (branding and the "needs attention" panel on its index)."""

from __future__ import annotations

from django.contrib.admin.apps import AdminConfig


class ServiceAdminConfig(AdminConfig):
    default_site = "config.admin_site.ServiceAdminSite"

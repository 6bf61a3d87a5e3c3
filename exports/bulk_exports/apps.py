from __future__ import annotations

from django.apps import AppConfig


class BulkExportsConfig(AppConfig):
    name = "exports.bulk_exports"
    label = "bulk_exports"
    verbose_name = "Bulk exports"

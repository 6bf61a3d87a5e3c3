"""The admin site: says what it is, and its index answers "is anything wrong?" first.

The panel's counts come from the apps' selectors; each links to the changelist filtered by the
same selector (the `health` filter of that list), so the count and the list always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.http import HttpResponsePermanentRedirect
from django.urls import re_path, reverse
from django.utils import timezone

from agentruntime.selectors import run_list_stale
from deployments.selectors import revision_list_failed
from exports.bulk_exports.selectors import export_list_failing, export_run_list_stuck
from exports.destinations.selectors import destination_list_failing_validation

# Bulk exports moved from the `exports` app label to their own app (issue 14): their admin pages moved from
# /admin/exports/<model>/ to /admin/bulk_exports/<model>/, and the old addresses redirect there.
MOVED_TO_BULK_EXPORTS = ("bulkexport", "bulkexportrun")


@dataclass(frozen=True)
class Attention:
    singular: str
    plural: str
    count: int
    url: str

    @property
    def label(self) -> str:
        return self.singular if self.count == 1 else self.plural


def attention_items() -> list[Attention]:
    now = timezone.now()
    checks = [
        ("failing export", "failing exports", export_list_failing(now=now), "bulk_exports_bulkexport", "failing"),
        ("failed revision", "failed revisions", revision_list_failed(), "deployments_revision", "failed"),
        ("destination failing validation", "destinations failing validation",
         destination_list_failing_validation(), "exports_destination", "failing"),
        ("export run stuck past its lease", "export runs stuck past their lease", export_run_list_stuck(now=now),
         "bulk_exports_bulkexportrun", "stuck"),
        ("chat run stuck (no heartbeat)", "chat runs stuck (no heartbeat)", run_list_stale(now=now),
         "agentruntime_chatrun", "stuck"),
    ]
    return [Attention(singular, plural, queryset.count(), f"{reverse(f'admin:{name}_changelist')}?health={value}")
            for singular, plural, queryset, name, value in checks]


class ServiceAdminSite(admin.AdminSite):
    site_header = "Agent operations admin"
    site_title = "Agent operations admin"
    index_title = "Overview"
    index_template = "admin/service_index.html"

    def index(self, request, extra_context=None):
        items = attention_items()
        context = {"attention": items, "attention_total": sum(item.count for item in items),
                   **(extra_context or {})}
        return super().index(request, context)

    def get_urls(self):
        models = "|".join(MOVED_TO_BULK_EXPORTS)
        moved = re_path(rf"^exports/(?P<model>{models})/(?P<rest>.*)$", moved_to_bulk_exports)
        return [moved, *super().get_urls()]


def moved_to_bulk_exports(request, model: str, rest: str):
    """An old bulk export admin address: the same page (and query) under its new app label."""
    return HttpResponsePermanentRedirect(request.get_full_path().replace(f"/exports/{model}/",
                                                                         f"/bulk_exports/{model}/", 1))

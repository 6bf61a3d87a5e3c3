"""The admin site: says what it is, and its index answers "is anything wrong?" first.

The panel's counts come from the apps' selectors; each links to the changelist filtered by the
same selector (the `health` filter of that list), so the count and the list always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from chat.selectors import run_list_stale
from deployments.selectors import revision_list_failed
from exports.export_selectors import export_list_failing, run_list_stuck
from exports.selectors import destination_list_failing_validation


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
        ("failing export", "failing exports", export_list_failing(now=now), "exports_bulkexport", "failing"),
        ("failed revision", "failed revisions", revision_list_failed(), "deployments_revision", "failed"),
        ("destination failing validation", "destinations failing validation",
         destination_list_failing_validation(), "exports_destination", "failing"),
        ("export run stuck past its lease", "export runs stuck past their lease", run_list_stuck(now=now),
         "exports_bulkexportrun", "stuck"),
        ("chat run stuck (no heartbeat)", "chat runs stuck (no heartbeat)", run_list_stale(now=now),
         "chat_chatrun", "stuck"),
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

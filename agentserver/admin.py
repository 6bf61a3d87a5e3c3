"""Assistants and crons in the admin: read-only, since the API's services own versioning and the firing of ticks."""

from __future__ import annotations

from django.contrib import admin

from agentserver.models import Assistant, AssistantVersion, Cron
from core.admin import ReadOnlyAdmin


class AssistantVersionInline(admin.TabularInline):
    model = AssistantVersion
    fields = ("version", "graph_id", "name", "metadata", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-version"]


@admin.register(Assistant)
class AssistantAdmin(ReadOnlyAdmin):
    list_display = ["assistant_id", "name", "graph_id", "version", "owner_kind", "workspace", "is_system",
                    "updated_at"]
    list_filter = ["owner_kind", "is_system", "graph_id"]
    search_fields = ["assistant_id", "name", "graph_id"]
    inlines = [AssistantVersionInline]


@admin.register(Cron)
class CronAdmin(ReadOnlyAdmin):
    list_display = ["id", "schedule", "timezone", "assistant_id", "thread_id", "enabled", "next_run_date", "end_time",
                    "owner_kind", "workspace"]
    list_filter = ["owner_kind", "enabled"]
    search_fields = ["id", "assistant_id", "thread_id", "schedule"]

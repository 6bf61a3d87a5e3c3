"""Assistants in the admin: read-only, since the API's services own versioning."""

from __future__ import annotations

from django.contrib import admin

from agentserver.models import Assistant, AssistantVersion
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

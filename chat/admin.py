"""A read-mostly console for chat threads, runs and the event log."""

from __future__ import annotations

from django.contrib import admin

from chat.models import ChatEvent, ChatRun, ChatThread


class ChatRunInline(admin.TabularInline):
    model = ChatRun
    fields = ["id", "status", "worker", "created_at", "finished_at", "error"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["-created_at"]


@admin.register(ChatThread)
class ChatThreadAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "owner_kind", "workspace", "user", "last_seq", "updated_at"]
    list_filter = ["owner_kind", "has_state"]
    list_select_related = ["workspace", "user"]
    search_fields = ["id", "title"]
    readonly_fields = ["id", "owner_kind", "workspace", "user", "title", "graph_name", "has_state", "last_seq",
                       "expired_through_seq", "metadata", "ttl", "expires_at", "created_at", "updated_at"]
    inlines = [ChatRunInline]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ChatRun)
class ChatRunAdmin(admin.ModelAdmin):
    list_display = ["id", "thread", "status", "worker", "heartbeat_at", "created_at", "finished_at"]
    list_filter = ["status"]
    list_select_related = ["thread"]
    search_fields = ["id", "thread__id"]
    readonly_fields = ["id", "thread", "status", "error", "worker", "heartbeat_at", "cancel_requested_at",
                       "created_at", "finished_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ChatEvent)
class ChatEventAdmin(admin.ModelAdmin):
    list_display = ["thread", "seq", "channel", "run"]
    list_filter = ["channel"]
    list_select_related = ["thread", "run"]
    search_fields = ["thread__id"]
    readonly_fields = ["thread", "run", "seq", "channel", "namespace", "payload"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

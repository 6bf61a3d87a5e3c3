"""A read-mostly console for chat threads, chat runs, the event log and the LangGraph store's items."""

from __future__ import annotations

import json

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html

from agentruntime.models import ChatEvent, ChatRun, ChatThread, StoreItem
from agentruntime.reads import run_list_stale
from core.admin import ReadOnlyAdmin, ago_column, clipped, health_filter, id_column, short_id, short_id_link


class ChatRunInline(admin.TabularInline):
    model = ChatRun
    fields = ("id", "status", "worker", "created_at", "finished_at", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["-created_at"]


@admin.register(ChatThread)
class ChatThreadAdmin(ReadOnlyAdmin):
    list_display = ["short", "title", "owner", "last_seq", "updated"]
    list_display_links = None
    list_filter = ["owner_kind", "has_state", "workspace"]
    list_select_related = ["workspace", "user"]
    search_fields = ["=id", "title"]
    readonly_fields = ["id", "owner_kind", "workspace", "user", "title", "graph_name", "has_state", "last_seq",
                       "expired_through_seq", "metadata", "ttl", "expires_at", "created_at", "updated_at"]
    inlines = [ChatRunInline]
    allow_delete = True  # nothing to edit here, but a thread may be removed (its runs and events go with it)

    @admin.display(description="thread")
    def short(self, obj):
        return short_id_link(obj)

    @admin.display(description="owner", ordering="owner_kind")
    def owner(self, obj):
        return obj.workspace or obj.user or "anonymous"

    updated = ago_column("updated_at", "updated")


@admin.register(ChatRun)
class ChatRunAdmin(ReadOnlyAdmin):
    list_display = ["short", "thread_link", "status", "worker", "heartbeat", "created", "finished", "failure"]
    list_display_links = None
    list_filter = [health_filter(stuck=("Stuck (no heartbeat)", run_list_stale)), "status"]
    list_select_related = ["thread"]
    search_fields = ["=id", "=thread__id"]
    readonly_fields = ["id", "thread", "status", "error", "worker", "worker_instance", "heartbeat_at",
                       "cancel_requested_at", "created_at", "finished_at"]
    allow_delete = True

    @admin.display(description="run")
    def short(self, obj):
        return short_id_link(obj)

    @admin.display(description="thread")
    def thread_link(self, obj):
        return short_id(obj.thread_id, reverse("admin:agentruntime_chatthread_change", args=[quote(obj.thread_id)]))

    heartbeat = ago_column("heartbeat_at", "heartbeat")

    created = ago_column("created_at", "created")

    finished = ago_column("finished_at", "finished")

    @admin.display(description="error")
    def failure(self, obj):
        return clipped(obj.error, 40)


@admin.register(ChatEvent)
class ChatEventAdmin(admin.ModelAdmin):
    list_display = ["thread_short", "seq", "channel", "run_short"]
    list_display_links = ["seq"]
    list_filter = ["channel"]
    list_select_related = ["thread", "run"]
    search_fields = ["=thread__id"]
    readonly_fields = ["thread", "run", "seq", "channel", "namespace", "payload"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="thread", ordering="thread_id")
    def thread_short(self, obj):
        return short_id(obj.thread_id)

    run_short = id_column("run_id", "run")


@admin.register(StoreItem)
class StoreItemAdmin(ReadOnlyAdmin):
    """The items graphs keep in their store (agentruntime/store/django_store.py), one owner's scope each: to look at
    and to delete. An expired item stays listed (with its past expiry) until the periodic sweep deletes it."""

    list_display = ["item", "namespace_shown", "key_shown", "owner", "updated", "expires"]
    list_display_links = ["item"]
    # Prefix searches: both are indexed with the scope, and a store can be large.
    search_fields = ["^namespace", "^key"]
    readonly_fields = ["scope", "namespace", "key", "value_pretty", "created_at", "updated_at", "expires_at",
                       "ttl_minutes"]
    fields = list(readonly_fields)
    ordering = ["-updated_at"]
    allow_delete = True

    @admin.display(description="item", ordering="id")
    def item(self, obj):
        return f"#{obj.pk}"

    @admin.display(description="namespace", ordering="namespace")
    def namespace_shown(self, obj):
        return clipped(obj.namespace.replace(".", " / "), 40)

    @admin.display(description="key", ordering="key")
    def key_shown(self, obj):
        return clipped(obj.key, 30)

    @admin.display(description="owner", ordering="scope")
    def owner(self, obj):
        return clipped(obj.scope, 24)

    @admin.display(description="value")
    def value_pretty(self, obj):
        text = json.dumps(obj.value, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre class="store-value">{}</pre>', text)

    updated = ago_column("updated_at", "updated")

    expires = ago_column("expires_at", "expires")

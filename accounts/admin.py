from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from accounts import services
from accounts.models import ApiKey, Workspace
from accounts.permissions import ALL_PERMISSIONS
from core.admin import ago_column, id_column


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "short", "created"]
    search_fields = ["name", "=id"]
    readonly_fields = ["id", "created_at"]

    short = id_column("id", "id")

    created = ago_column("created_at", "created")


class ApiKeyCreateForm(forms.ModelForm):
    permissions = forms.MultipleChoiceField(
        choices=[(p, p) for p in ALL_PERMISSIONS], widget=forms.CheckboxSelectMultiple, initial=ALL_PERMISSIONS
    )

    class Meta:
        model = ApiKey
        fields = ["name", "workspaces", "permissions", "expires_at"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["__str__", "prefix", "status", "created", "expires", "revoked"]
    list_filter = ["revoked_at", "workspaces"]
    search_fields = ["name", "prefix"]
    filter_horizontal = ["workspaces"]
    actions = ["revoke"]
    # The hash never appears: it is no secret by itself, but nothing needs to see it.
    readonly_fields = ["prefix", "permissions", "workspaces_list", "created_at", "expires_at", "revoked_at"]
    fields = ["name", "prefix", "permissions", "workspaces_list", "created_at", "expires_at", "revoked_at"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ["name", "workspaces", "permissions", "expires_at"] if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    @admin.display(description="workspaces")
    def workspaces_list(self, obj):
        return ", ".join(w.name for w in obj.workspaces.all())

    created = ago_column("created_at", "created")

    expires = ago_column("expires_at", "expires")

    revoked = ago_column("revoked_at", "revoked")

    @admin.display(description="status")
    def status(self, obj):
        if obj.revoked_at:
            return "revoked"
        if obj.expires_at and obj.expires_at <= timezone.now():
            return "expired"
        return "active"

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name", "updated_at"])
            return
        api_key, raw_key = services.api_key_create(
            workspaces=list(form.cleaned_data["workspaces"]),
            permissions=form.cleaned_data["permissions"],
            name=form.cleaned_data["name"],
            expires_at=form.cleaned_data.get("expires_at"),
        )
        form.instance = api_key
        obj.pk, obj.prefix = api_key.pk, api_key.prefix
        self.message_user(request, f"API key created. Copy it now, it will not be shown again: {raw_key}",
                          messages.WARNING)

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    @admin.action(description="Revoke selected API keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            services.api_key_revoke(api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")

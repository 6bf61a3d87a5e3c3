"""Admin: providers (the client secret is write-only, typed into a password input) and tokens (values never shown)."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from agentauth import services
from agentauth.models import AuthFlow, OAuthProvider, OAuthToken
from core.admin import ReadOnlyAdmin, ago_column, clipped, short_id_link
from core.exceptions import RequestValidationError, ServiceError


class ProviderForm(forms.ModelForm):
    # render_value=False: the stored secret never goes back to the browser, not even masked.
    client_secret = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Leave empty to keep the stored secret.",
    )
    auth_url = forms.URLField(max_length=2048, assume_scheme="https")
    token_url = forms.URLField(max_length=2048, assume_scheme="https")

    class Meta:
        model = OAuthProvider
        fields = ["workspace", "provider_id", "name", "client_id", "client_secret", "auth_url", "token_url",
                  "uses_pkce", "code_challenge_method"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["client_secret"] = ""

    def clean(self):
        cleaned = super().clean()
        secret = cleaned.get("client_secret") or (self.instance.client_secret if self.instance.pk else "")
        try:
            services.provider_urls_check({k: cleaned[k] for k in ("auth_url", "token_url") if cleaned.get(k)})
            services.provider_public_client_check(client_secret=secret, uses_pkce=cleaned.get("uses_pkce", False))
        except ServiceError as exc:
            raise forms.ValidationError(exc.detail) from None
        except RequestValidationError as exc:
            raise forms.ValidationError([item["msg"] for item in exc.errors]) from None
        return cleaned


@admin.register(OAuthProvider)
class OAuthProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = ["provider_id", "name", "workspace", "client", "uses_pkce", "created"]
    list_filter = ["workspace", "uses_pkce"]
    list_select_related = ["workspace"]
    search_fields = ["provider_id", "name", "client_id"]

    def get_readonly_fields(self, request, obj=None):
        return ["workspace", "provider_id"] if obj else []

    @admin.display(description="client id", ordering="client_id")
    def client(self, obj):
        return clipped(obj.client_id, 30)

    created = ago_column("created_at", "created")

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in services.PROVIDER_FIELDS if name in form.cleaned_data}
        if change and not data.get("client_secret"):
            data.pop("client_secret", None)
        if change:
            saved = services.provider_update(provider=OAuthProvider.objects.get(pk=obj.pk), **data)
        else:
            saved = services.provider_create(workspace=form.cleaned_data["workspace"],
                                             provider_id=form.cleaned_data["provider_id"], **data)
        obj.pk = saved.pk
        form.instance = saved


@admin.register(OAuthToken)
class OAuthTokenAdmin(ReadOnlyAdmin):
    list_display = ["user_id", "agent_id", "provider", "workspace", "expires", "has_refresh_token", "updated"]
    list_filter = ["workspace", "provider"]
    list_select_related = ["provider", "workspace"]
    search_fields = ["user_id", "agent_id", "provider__provider_id"]
    # The token values are deliberately absent from every list and form.
    fields = ("workspace", "provider", "user_id", "agent_id", "token_type", "scopes", "expires_at",
              "has_refresh_token", "created_at", "updated_at")
    readonly_fields = fields
    allow_delete = True  # deleting a row here revokes it

    @admin.display(boolean=True, description="refresh token")
    def has_refresh_token(self, obj):
        return bool(obj.refresh_token)

    expires = ago_column("expires_at", "expires")

    updated = ago_column("updated_at", "updated")


@admin.register(AuthFlow)
class AuthFlowAdmin(ReadOnlyAdmin):
    list_display = ["short", "provider", "user_id", "agent_id", "status", "failure", "created", "expires"]
    list_display_links = None
    list_filter = ["status", "workspace"]
    list_select_related = ["provider"]
    search_fields = ["id", "user_id", "agent_id"]
    # No state, verifier or browser binding: only what helps to follow a user's sign-in.
    fields = ("id", "workspace", "provider", "user_id", "agent_id", "scopes", "status", "error", "created_at",
              "expires_at", "started_at", "state_used_at", "completed_at")
    readonly_fields = fields
    allow_delete = True  # finished or stale flows may be removed

    @admin.display(description="flow")
    def short(self, obj):
        return short_id_link(obj)

    @admin.display(description="error")
    def failure(self, obj):
        return clipped(obj.error, 40)

    created = ago_column("created_at", "created")

    expires = ago_column("expires_at", "expires")

"""Admin for bulk export destinations: the same validation, rate limit and messages as the API.

Credential inputs are password fields that are never rendered back, credential versions are
listed without their secret (which is not even loaded, so an undecryptable row cannot break a
page), and every write goes through the services.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from core.admin import ReadOnlyAdmin
from core.exception_handler import flatten_errors
from core.exceptions import ServiceError
from exports import services
from exports.models import CredentialVersion, Destination
from exports.serializers import DestinationCreateInputSerializer, DestinationUpdateInputSerializer
from exports.storage import ADDRESSING_STYLES

_SECRET = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})
CONFIG_FIELDS = ["bucket_name", "prefix", "region", "endpoint_url", "include_bucket_in_prefix", "addressing_style"]
CREDENTIAL_FIELDS = ["access_key_id", "secret_access_key", "session_token"]


class CredentialFieldsMixin(forms.Form):
    """Credential inputs: password fields, never rendered back, values only ever sent to the service."""

    access_key_id = forms.CharField(required=False, widget=_SECRET)
    secret_access_key = forms.CharField(required=False, widget=_SECRET)
    session_token = forms.CharField(required=False, widget=_SECRET, help_text="Only for temporary credentials.")

    def credentials(self) -> dict:
        return {name: self.cleaned_data[name] for name in CREDENTIAL_FIELDS if self.cleaned_data.get(name)}


def _apply_errors(form: forms.Form, errors: list[dict]) -> None:
    """Show serializer errors (loc ["body", "config", "bucket_name"] …) on the matching form fields."""
    for error in errors:
        names = [part for part in error["loc"] if isinstance(part, str) and part in form.fields]
        form.add_error(names[-1] if names else None, error["msg"])


class DestinationAddForm(CredentialFieldsMixin, forms.ModelForm):
    bucket_name = forms.CharField(max_length=63)
    prefix = forms.CharField(max_length=1024, required=False)
    region = forms.CharField(max_length=64, required=False, help_text="Required for AWS (no endpoint URL).")
    endpoint_url = forms.CharField(max_length=2048, required=False, help_text="Omit for AWS.")
    include_bucket_in_prefix = forms.BooleanField(required=False, initial=True)
    addressing_style = forms.ChoiceField(choices=[(s, s) for s in ADDRESSING_STYLES], initial="auto")

    class Meta:
        model = Destination
        fields = ["workspace", "display_name"]

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        payload = self._payload(cleaned, self.credentials())
        serializer = DestinationCreateInputSerializer(data=payload)
        if not serializer.is_valid():
            _apply_errors(self, flatten_errors(serializer.errors, ["body"]))
            return cleaned
        values = serializer.validated_data
        try:
            services.validation_attempt_register(workspace=cleaned["workspace"])
            self.created = services.destination_create(
                workspace=cleaned["workspace"], display_name=values["display_name"], config=values["config"],
                credentials=payload.get("credentials"), destination_type=values["destination_type"])
        except ServiceError as exc:
            raise ValidationError(exc.detail) from None
        return cleaned

    @staticmethod
    def _payload(cleaned: dict, credentials: dict) -> dict:
        config = {"bucket_name": cleaned.get("bucket_name"), "prefix": cleaned.get("prefix") or "",
                  "region": cleaned.get("region") or None, "endpoint_url": cleaned.get("endpoint_url") or None,
                  "include_bucket_in_prefix": bool(cleaned.get("include_bucket_in_prefix"))}
        config["config_kwargs_s3"] = {"addressing_style": cleaned.get("addressing_style") or "auto"}
        payload = {"destination_type": "s3", "display_name": cleaned.get("display_name"), "config": config}
        if credentials:
            payload["credentials"] = credentials
        return payload


class DestinationChangeForm(CredentialFieldsMixin, forms.ModelForm):
    """Rotates the credentials (PATCH's rules: test write first, nothing else changes)."""

    class Meta:
        model = Destination
        fields: list[str] = []

    def clean(self):
        cleaned = super().clean()
        credentials = self.credentials()
        self.rotated = None
        if not credentials:
            return cleaned
        serializer = DestinationUpdateInputSerializer(data={"credentials": credentials})
        if not serializer.is_valid():
            _apply_errors(self, flatten_errors(serializer.errors, ["body"]))
            return cleaned
        try:
            services.validation_attempt_register(workspace=self.instance.workspace)
            self.rotated = services.destination_credentials_update(destination=self.instance, credentials=credentials)
        except ServiceError as exc:
            raise ValidationError(exc.detail) from None
        return cleaned


@admin.register(Destination)
class DestinationAdmin(admin.ModelAdmin):
    list_display = ["display_name", "workspace", "bucket", "endpoint", "region", "credentials", "last_validated_at",
                    "created_at", "deleted"]
    list_filter = ["workspace", ("deleted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["workspace"]
    search_fields = ["display_name", "id"]
    actions = ["validate_again", "delete_destinations"]
    readonly_fields = ["id", "workspace", "display_name", "destination_type", "config", "credentials",
                       "last_validated_at", "created_at", "updated_at", "deleted_at"]

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = DestinationAddForm if obj is None else DestinationChangeForm
        kwargs["fields"] = None
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["workspace", "display_name", *CONFIG_FIELDS, *CREDENTIAL_FIELDS]
        return [*self.readonly_fields, *CREDENTIAL_FIELDS]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # deletion goes through the service (409 while in use)
        return actions

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="bucket")
    def bucket(self, obj):
        return obj.config.get("bucket_name")

    @admin.display(description="endpoint")
    def endpoint(self, obj):
        return obj.config.get("endpoint_url") or "AWS"

    @admin.display(description="region")
    def region(self, obj):
        return obj.config.get("region") or "-"

    @admin.display(description="credentials")
    def credentials(self, obj):
        # Names and revision only; values are never shown (and never loaded for this page).
        if not obj.current_credentials_id:
            return "environment"
        return f"revision {obj.credentials_revision}: {', '.join(obj.credentials_keys)}"

    @admin.display(boolean=True, description="deleted")
    def deleted(self, obj):
        return obj.deleted_at is not None

    def save_model(self, request, obj, form, change):
        # The form's clean() already ran the service (so that its errors are form errors).
        result = getattr(form, "created", None) or getattr(form, "rotated", None)
        if result is not None:
            form.instance = result
            obj.pk = result.pk
            obj.display_name = result.display_name
        if change and result is not None:
            self.message_user(request, "Credentials rotated: new export runs use them from now on.")

    def save_related(self, request, form, formsets, change):
        """Nothing to save: the service already wrote the destination and its credential version."""

    @admin.action(description="Validate again (test write)")
    def validate_again(self, request, queryset):
        for destination in queryset.filter(deleted_at__isnull=True).select_related("workspace"):
            try:
                services.validation_attempt_register(workspace=destination.workspace)
                services.destination_validate(destination=destination)
            except ServiceError as exc:
                self.message_user(request, f"{destination}: {exc.detail}", messages.ERROR)
            else:
                self.message_user(request, f"{destination}: the test write succeeded.", messages.SUCCESS)

    @admin.action(description="Delete selected destinations")
    def delete_destinations(self, request, queryset):
        for destination in queryset.filter(deleted_at__isnull=True):
            try:
                services.destination_delete(destination=destination)
            except ServiceError as exc:
                self.message_user(request, f"{destination}: {exc.detail}", messages.ERROR)
            else:
                self.message_user(request, f"{destination}: deleted.", messages.SUCCESS)


@admin.register(CredentialVersion)
class CredentialVersionAdmin(ReadOnlyAdmin):
    list_display = ["destination", "number", "keys", "created_at", "retired_at", "purged_at"]
    list_select_related = ["destination"]
    list_filter = [("retired_at", admin.EmptyFieldListFilter), ("purged_at", admin.EmptyFieldListFilter)]
    fields = readonly_fields = ["id", "destination", "number", "keys", "created_at", "retired_at", "purged_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("secret")

    @admin.display(description="credential fields")
    def keys(self, obj):
        return ", ".join(obj.credentials_keys)



from exports import export_admin  # noqa: E402,F401 - registers the bulk export job admin

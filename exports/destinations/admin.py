"""Admin for bulk export destinations: the same validation, rate limit and messages as the API.

Forms check their input with the API's own input serializers, and every write (test writes, and
so their rate limit, included) goes through the services. Credential inputs are password fields
that are never rendered back, credential versions are listed without their secret (which is not
even loaded, so an undecryptable row cannot break a page). Rotation has its own page (`rotate_view`).
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html
from django.utils.timesince import timeuntil
from django.utils.timezone import now
from django.views.decorators.debug import sensitive_post_parameters

from core.admin import ObjectButton, ObjectButtonsMixin, ObjectLink, ReadOnlyAdmin, ago, ago_column, health_filter
from core.exceptions import ServiceError
from exports.destinations import selectors, services
from exports.destinations.api import DestinationCreateApi, DestinationCredentialsUpdateApi
from exports.destinations.models import CredentialVersion, Destination
from exports.s3_clients import ADDRESSING_STYLES

_SECRET = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})
CONFIG_FIELDS = ["bucket_name", "prefix", "region", "endpoint_url", "include_bucket_in_prefix", "addressing_style"]
CREDENTIAL_FIELDS = ["access_key_id", "secret_access_key", "session_token"]


class CredentialFieldsMixin(forms.Form):
    """Credential inputs: labelled password fields, never rendered back, values only ever sent to the service."""

    access_key_id = forms.CharField(label="Access key ID", required=False, widget=_SECRET)
    secret_access_key = forms.CharField(label="Secret access key", required=False, widget=_SECRET)
    session_token = forms.CharField(label="Session token (optional)", required=False, widget=_SECRET,
                                    help_text="Only for temporary credentials (STS).")

    def credentials(self) -> dict:
        return {name: self.cleaned_data[name] for name in CREDENTIAL_FIELDS if self.cleaned_data.get(name)}


def _apply_errors(form: forms.Form, errors, field: str | None = None) -> None:
    """Show a serializer's nested errors ({"config": {"bucket_name": […]}} …) on the form field that the
    deepest key naming one points at (the form as a whole when none does)."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            _apply_errors(form, value, key if key in form.fields else field)
    elif isinstance(errors, list):
        for item in errors:
            _apply_errors(form, item, field)
    else:
        form.add_error(field, str(errors))


class DestinationAddForm(CredentialFieldsMixin, forms.ModelForm):
    bucket_name = forms.CharField(max_length=63)
    # Django's form metaclass takes declared fields off the class (the stubs see a clash with BaseForm.prefix).
    prefix = forms.CharField(max_length=1024, required=False)  # type: ignore[assignment]
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
        serializer = DestinationCreateApi.InputSerializer(data=payload)
        if not serializer.is_valid():
            _apply_errors(self, serializer.errors)
            return cleaned
        values = serializer.validated_data
        try:
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


class RotateCredentialsForm(CredentialFieldsMixin):
    """PATCH's rules: a test write with the new credentials first; nothing is stored when it fails."""

    def __init__(self, *args, destination: Destination, **kwargs):
        super().__init__(*args, **kwargs)
        self.destination = destination
        self.fields["access_key_id"].required = True
        self.fields["secret_access_key"].required = True
        self.rotated = None

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        serializer = DestinationCredentialsUpdateApi.InputSerializer(data={"credentials": self.credentials()})
        if not serializer.is_valid():
            _apply_errors(self, serializer.errors)
            return cleaned
        try:
            self.rotated = services.destination_credentials_update(destination=self.destination,
                                                                   credentials=self.credentials())
        except ServiceError as exc:
            raise ValidationError(exc.detail) from None
        return cleaned


class DestinationChangeForm(forms.ModelForm):
    """Nothing to edit on the page itself: credentials are replaced on their own page (Rotate credentials)."""

    class Meta:
        model = Destination
        fields: list[str] = []


class DeletedFilter(admin.SimpleListFilter):
    """Deleted destinations stay out of the list unless asked for."""

    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("yes", "Deleted only"), ("all", "Live and deleted")]

    def choices(self, changelist):
        yield {"selected": self.value() is None, "display": "Live only",
               "query_string": changelist.get_query_string(remove=[self.parameter_name])}
        for value, label in self.lookup_choices:
            yield {"selected": self.value() == value, "display": label,
                   "query_string": changelist.get_query_string({self.parameter_name: value})}

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "all":
            return queryset
        return queryset.filter(deleted_at__isnull=True)


@admin.register(Destination)
class DestinationAdmin(ObjectButtonsMixin, admin.ModelAdmin):
    list_display = ["display_name", "workspace", "where", "credentials", "validation", "created"]
    list_filter = [health_filter(failing=("Last validation failed", selectors.destination_list_failing_validation)),
                   DeletedFilter, "workspace"]
    list_select_related = ["workspace"]
    search_fields = ["display_name", "id"]
    actions = ["validate_again", "delete_destinations"]
    readonly_fields = ["id", "workspace", "display_name", "destination_type", "config", "credentials", "validation",
                       "validation_error",
                       "last_validated_at", "created_at", "updated_at", "deleted_at"]
    save_as_continue = False

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = DestinationAddForm if obj is None else DestinationChangeForm
        kwargs["fields"] = None
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["workspace", "display_name", *CONFIG_FIELDS, *CREDENTIAL_FIELDS]
        return self.readonly_fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or obj.deleted_at is None)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # deletion goes through the service (409 while in use)
        return actions

    def has_delete_permission(self, request, obj=None):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {"show_save_and_add_another": False, "show_save_and_continue": False, **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    @admin.display(description="where")
    def where(self, obj):
        endpoint, region = obj.config.get("endpoint_url"), obj.config.get("region") or ""
        place = f"{endpoint.split('://', 1)[-1]} {region}".strip() if endpoint else f"AWS {region}".strip()
        return format_html('<span class="clipped" title="{}">{}</span>', f"s3://{obj.bucket_name} at {place}",
                           f"{obj.bucket_name} · {place}")

    @admin.display(description="credentials")
    def credentials(self, obj):
        # Names and revision only; values are never shown (and never loaded for this page).
        if not obj.current_credentials_id:
            return "environment"
        return f"revision {obj.credentials_revision}: {', '.join(obj.credentials_keys)}"

    @admin.display(description="validation")
    def validation(self, obj):
        if obj.deleted_at is not None:
            return format_html('<span class="status status-off">Deleted</span> {}', ago(obj.deleted_at))
        if obj.validation_failed_at is not None:
            return format_html('<span class="status status-bad" title="{}">Failing</span> {}',
                               obj.validation_error, ago(obj.validation_failed_at))
        return format_html('<span class="status status-ok">OK</span> {}', ago(obj.last_validated_at))

    created = ago_column("created_at", "created")

    # --- the destination's own page ---------------------------------------------------------------------

    def get_object_buttons(self, request, obj):
        if obj.deleted_at is not None:
            return []
        return [
            ObjectButton("validate", "Validate now"),
            ObjectLink("Rotate credentials", f"{self.change_url(obj)}rotate-credentials/"),
            ObjectButton("delete", "Delete", danger=True, done_url="changelist", confirm=(
                f"Delete the destination “{obj}”? New exports cannot use it any more; exports that wrote to it "
                "keep their history. This is refused while an unfinished export still uses it.")),
        ]

    def button_validate(self, request, obj):
        check = services.destination_validate(destination=obj)
        left = "" if check.deleted else " (the test file was left in place: no permission to delete it)"
        return f"{obj}: the test write succeeded{left}."

    def button_delete(self, request, obj):
        services.destination_delete(destination=obj)
        return f"{obj}: deleted."

    def response_change(self, request, obj):
        self.message_user(request, f"Nothing was changed: “{obj}” keeps its credentials (revision "
                                   f"{obj.credentials_revision}). To replace them, use Rotate credentials.",
                          messages.INFO)
        return HttpResponseRedirect(self.change_url(obj))

    def save_model(self, request, obj, form, change):
        # Adding: the form's clean() already ran the service (so that its errors are form errors).
        # Changing: the page has no editable field; nothing is written.
        created = getattr(form, "created", None)
        if created is not None:
            form.instance = created
            obj.pk = created.pk
            obj.display_name = created.display_name

    def save_related(self, request, form, formsets, change):
        """Nothing to save: the service already wrote the destination and its credential version."""

    def log_change(self, request, obj, message):
        """Saving the change page writes nothing, so it leaves no "changed" entry in the history either."""

    # --- rotation: its own page ---------------------------------------------------------------------------

    def get_urls(self):
        rotate = self.admin_site.admin_view(sensitive_post_parameters(*CREDENTIAL_FIELDS)(self.rotate_view))
        return [path("<path:object_id>/change/rotate-credentials/", rotate,
                     name="exports_destination_rotate"), *super().get_urls()]

    def rotate_view(self, request, object_id):
        destination = self.get_object(request, unquote(object_id))
        if destination is None or destination.deleted_at is not None:
            raise Http404("No such destination (or it was deleted).")
        if not self.has_change_permission(request, destination):
            raise PermissionDenied
        form = RotateCredentialsForm(request.POST or None, destination=destination)
        if request.method == "POST" and form.is_valid():
            rotated = form.rotated
            self.message_user(request, f"Credentials of “{rotated}” rotated to revision {rotated.credentials_revision}"
                                       f": new export runs use them; export runs in flight keep revision "
                                       f"{rotated.credentials_revision - 1} until they finish.", messages.SUCCESS)
            return HttpResponseRedirect(self.change_url(destination))
        grace, moment = timedelta(seconds=settings.EXPORTS_CREDENTIAL_PURGE_GRACE_SECONDS), now()
        context = {**self.admin_site.each_context(request), "title": "Rotate credentials", "subtitle": str(destination),
                   "opts": self.opts, "app_label": self.opts.app_label, "object": destination, "form": form,
                   "change_url": self.change_url(destination), "grace": timeuntil(moment + grace, moment)}
        return TemplateResponse(request, "admin/exports/destination/rotate_credentials.html", context)

    # --- list actions (several at once) -------------------------------------------------------------------

    @admin.action(description="Validate again (test write)")
    def validate_again(self, request, queryset):
        self._each(request, queryset.filter(deleted_at__isnull=True).select_related("workspace"),
                   services.destination_validate, done="the test write succeeded.")

    @admin.action(description="Delete selected destinations")
    def delete_destinations(self, request, queryset):
        self._each(request, queryset.filter(deleted_at__isnull=True), services.destination_delete, done="deleted.")

    def _each(self, request, destinations, service, *, done: str) -> None:
        """Call `service` on each destination in turn, and say for each what came of it."""
        for destination in destinations:
            try:
                service(destination=destination)
            except ServiceError as exc:
                self.message_user(request, f"{destination}: {exc.detail}", messages.ERROR)
            else:
                self.message_user(request, f"{destination}: {done}", messages.SUCCESS)


@admin.register(CredentialVersion)
class CredentialVersionAdmin(ReadOnlyAdmin):
    list_display = ["version", "destination", "keys", "created", "retired", "purged"]
    list_select_related = ["destination"]
    list_filter = [("retired_at", admin.EmptyFieldListFilter), ("purged_at", admin.EmptyFieldListFilter)]
    search_fields = ["destination__display_name", "=destination__id"]
    fields = readonly_fields = ("id", "destination", "number", "keys", "created_at", "retired_at", "purged_at")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("secret")

    @admin.display(description="version", ordering="number")
    def version(self, obj):
        return f"v{obj.number}"

    @admin.display(description="credential fields")
    def keys(self, obj):
        return ", ".join(obj.credentials_keys)

    created = ago_column("created_at", "created")

    retired = ago_column("retired_at", "retired")

    purged = ago_column("purged_at", "secret erased")


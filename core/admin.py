"""Admin pieces shared by the apps: read-only rows, buttons on an object's own page, compact list cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince

from core.exceptions import RequestValidationError, ServiceError

SHORT_ID = 8
# Two overlapping sheets (no icon font: the admin's fonts have no copy glyph).
COPY_ICON = mark_safe(
    '<svg viewBox="0 0 16 16" aria-hidden="true" fill="none" stroke="currentColor" stroke-width="1.5">'
    '<rect x="5.5" y="5.5" width="8" height="8" rx="1.5"/><path d="M10.5 3.5v-1a1 1 0 0 0-1-1h-6a1 1 0 0 0-1 1v6'
    'a1 1 0 0 0 1 1h1"/></svg>')


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that services write: the admin shows them (and runs actions), never adds or edits them.

    `allow_delete` keeps the admin's own delete for models whose rows may simply be removed.
    """

    allow_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.allow_delete and super().has_delete_permission(request, obj)


# --- buttons on an object's own page ----------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectButton:
    """A button on a change page that runs `button_<name>(request, obj)` on the ModelAdmin (a service call).

    `confirm` (a sentence on what will happen) puts a confirmation page first, as Django's delete does;
    `done_url` names where to go afterwards: "change" (the object's page) or "changelist".
    """

    name: str
    label: str
    confirm: str = ""
    danger: bool = False
    done_url: str = "change"


@dataclass(frozen=True)
class ObjectLink:
    """A plain link among the buttons (a related page, an external URL)."""

    label: str
    url: str
    external: bool = False


if TYPE_CHECKING:
    # The mixin goes on ModelAdmins and uses their attributes (opts, admin_site, message_user, ...).
    _ModelAdminBase = admin.ModelAdmin
else:
    _ModelAdminBase = object


class ObjectButtonsMixin(_ModelAdminBase):
    """Adds the buttons of `get_object_buttons(request, obj)` to the change page, each behind its own URL.

    A button's handler returns the success message or raises a ServiceError, whose message is shown as
    an error: the outcome always lands in the admin's messages.
    """

    change_form_template = "admin/object_buttons_change_form.html"

    def get_object_buttons(self, request, obj) -> list[ObjectButton | ObjectLink]:
        return []

    def get_urls(self):
        extra = [path("<path:object_id>/do/<slug:name>/", self.admin_site.admin_view(self.object_button_view),
                      name=f"{self.opts.app_label}_{self.opts.model_name}_button")]
        return extra + super().get_urls()

    def button_url(self, obj, name: str) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_button", args=[quote(obj.pk), name],
                       current_app=self.admin_site.name)

    def change_url(self, obj) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[quote(obj.pk)],
                       current_app=self.admin_site.name)

    def may_press_buttons(self, request) -> bool:
        # The model's change permission as granted (ReadOnlyAdmin refuses the admin's own edit form).
        return request.user.has_perm(f"{self.opts.app_label}.change_{self.opts.model_name}")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        buttons = []
        may_press = obj is not None and self.may_press_buttons(request)
        for button in self.get_object_buttons(request, obj) if obj is not None else []:
            if isinstance(button, ObjectLink):  # links only lead somewhere: anyone who sees the page gets them
                buttons.append({"label": button.label, "url": button.url, "external": button.external})
            elif may_press:
                buttons.append({"label": button.label, "url": self.button_url(obj, button.name),
                                "post": not button.confirm, "danger": button.danger})
        context["object_buttons"] = buttons
        return super().render_change_form(request, context, add, change, form_url, obj)

    def object_button_view(self, request, object_id, name):
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(f"No {self.opts.verbose_name} with id {object_id}.")
        if not self.may_press_buttons(request):
            raise PermissionDenied
        button = next((b for b in self.get_object_buttons(request, obj)
                       if isinstance(b, ObjectButton) and b.name == name), None)
        if button is None:
            self.message_user(request, f"“{name}” is not available for this {self.opts.verbose_name} now.",
                              messages.WARNING)
            return HttpResponseRedirect(self.change_url(obj))
        if request.method == "POST":
            return self._press(request, obj, button)
        if request.method == "GET" and button.confirm:
            return self.render_confirmation(request, obj, button)
        return HttpResponseNotAllowed(["POST"])

    def _press(self, request, obj, button: ObjectButton):
        try:
            message = getattr(self, f"button_{button.name}")(request, obj)
        except ServiceError as exc:
            self.message_user(request, f"{button.label} failed: {exc.detail}", messages.ERROR)
            return HttpResponseRedirect(self.change_url(obj))
        except RequestValidationError as exc:
            details = "; ".join(item["msg"] for item in exc.errors)
            self.message_user(request, f"{button.label} failed: {details}", messages.ERROR)
            return HttpResponseRedirect(self.change_url(obj))
        self.message_user(request, message, messages.SUCCESS)
        if button.done_url == "changelist":
            return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist",
                                                current_app=self.admin_site.name))
        return HttpResponseRedirect(self.change_url(obj))

    def render_confirmation(self, request, obj, button: ObjectButton):
        context = {
            **self.admin_site.each_context(request),
            "title": f"{button.label}: are you sure?",
            "subtitle": str(obj),
            "object": obj,
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "button": button,
            "change_url": self.change_url(obj),
        }
        return TemplateResponse(request, "admin/object_button_confirm.html", context)


# --- compact list cells ---------------------------------------------------------------------------------


def short_id(value, url: str | None = None):
    """The first characters of an id; the whole id on hover and in a copy button."""
    if value in (None, ""):
        return "-"
    full = str(value)
    label = full[:SHORT_ID] + ("…" if len(full) > SHORT_ID else "")
    if url:
        shown = format_html('<a href="{}" class="short-id" title="{}">{}</a>', url, full, label)
    else:
        shown = format_html('<span class="short-id" title="{}">{}</span>', full, label)
    return format_html('<span class="id-cell">{}<button type="button" class="copy-id" data-copy="{}" title="Copy {}" '
                       'aria-label="Copy the whole id">{}</button></span>', shown, full, full, COPY_ICON)


def short_id_link(obj):
    """The object's short id as the link to its own page (for lists whose first column is the id).

    Lists using it set `list_display_links = None`: Django's own link would wrap the copy button in the link.
    """
    opts = obj._meta
    return short_id(obj.pk, reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)]))


def ago(moment):
    """'3 min ago' (or 'in 3 min'), the exact time on hover."""
    if moment is None:
        return "-"
    now = timezone.now()
    local = timezone.localtime(moment)
    exact = local.strftime("%Y-%m-%d %H:%M:%S %Z")
    if moment <= now:
        words = "just now" if (now - moment).total_seconds() < 60 else f"{_short_since(moment, now)} ago"
    else:
        words = "in a moment" if (moment - now).total_seconds() < 60 else f"in {_short_since(now, moment)}"
    return format_html('<time datetime="{}" title="{}">{}</time>', moment.isoformat(), exact, words)


def ago_column(field: str, description: str):
    """A list column showing `field` as "3 min ago" (the exact time on hover), sortable by it."""

    @admin.display(description=description, ordering=field)
    def column(self, obj):
        return ago(getattr(obj, field))

    return column


def id_column(field: str = "id", description: str = "id"):
    """A list column showing `field` as a short id (the whole id on hover, with a copy button)."""

    @admin.display(description=description)
    def column(self, obj):
        return short_id(getattr(obj, field))

    return column


def _short_since(earlier, later) -> str:
    words = timesince(earlier, later, depth=1)
    for long, short in (("minutes", "min"), ("minute", "min"), ("hours", "h"), ("hour", "h")):
        words = words.replace(long, short)
    return words.replace("\xa0", " ")


def clipped(text: str, width: int = 60):
    """Long free text (an error, a message) cut to one short line; the whole of it on hover."""
    if not text:
        return "-"
    text = str(text)
    shown = text if len(text) <= width else text[: width - 1] + "…"
    return format_html('<span class="clipped" title="{}">{}</span>', text, shown)


# --- filters --------------------------------------------------------------------------------------------


class HealthFilter(admin.SimpleListFilter):
    """The "needs attention" filter of a list: each choice is a selector, the same one the admin index counts.

    Subclasses set `checks = {"value": ("label", selector)}`; the selector takes no argument and returns a
    queryset of the list's model.
    """

    title = "needs attention"
    parameter_name = "health"
    checks: dict = {}

    def lookups(self, request, model_admin):
        return [(value, label) for value, (label, _) in self.checks.items()]

    def queryset(self, request, queryset):
        check = self.checks.get(self.value())
        return queryset.filter(pk__in=check[1]().values("pk")) if check else queryset


def health_filter(**checks) -> type[HealthFilter]:
    return type("HealthFilter", (HealthFilter,), {"checks": checks})

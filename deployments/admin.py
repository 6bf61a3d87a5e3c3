"""Deployments and revisions in the admin: honest status, logs, the served revision, redeploy and delete.

Read-mostly: changes go through the API's services. Secret values are never shown.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from core.admin import (
    ObjectButton,
    ObjectButtonsMixin,
    ObjectLink,
    ReadOnlyAdmin,
    ago_column,
    clipped,
    health_filter,
)
from core.exceptions import ServiceError
from deployments import selectors, services, states
from deployments.models import Deployment, Revision, RevisionLog

LOG_LINES = 300
LOG_PAGE = 500
S = states.RevisionStatus
STATUS_CLASS: dict[str, str] = {S.DEPLOYED: "ok", S.CREATE_FAILED: "bad", S.BUILD_FAILED: "bad", S.DEPLOY_FAILED: "bad",
                S.SKIPPED: "off", S.INTERRUPTED: "off", S.UNKNOWN: "off"}


def revision_status(revision: Revision, active_revision_id) -> tuple[str, str]:
    """(label, css class): a DEPLOYED revision that is no longer served says Replaced, never Deployed."""
    if revision.status == S.DEPLOYED:
        return ("Serving", "ok") if revision.id == active_revision_id else ("Replaced", "off")
    return revision.status, STATUS_CLASS.get(revision.status, "busy")


def revision_message(revision: Revision, active_revision_id) -> str:
    if revision.status == S.DEPLOYED and revision.id != active_revision_id:
        return "No longer served: a newer revision replaced it."
    return revision.status_message


def revision_badge(revision: Revision, active_revision_id):
    label, css = revision_status(revision, active_revision_id)
    return format_html('<span class="status status-{}" title="{}">{}</span>', css, revision.status_message or label,
                       label)


class RevisionColumns:
    """The columns a revision's row shows, in the deployment's inline and in the revisions' list."""

    # Characters of the status message in a list (all of it on hover): enough for a build failure's one-line reason,
    # `Graph 'agent' failed to load: src/agent/graph.py, line 19: SyntaxError: expected ':'`.
    message_width = 120

    @admin.display(description="status", ordering="status")
    def honest_status(self, obj):
        return revision_badge(obj, obj.deployment.active_revision_id)

    @admin.display(description="message")
    def message(self, obj):
        return clipped(revision_message(obj, obj.deployment.active_revision_id), self.message_width)

    created = ago_column("created_at", "created")
    updated = ago_column("updated_at", "updated")


class RevisionInline(RevisionColumns, admin.TabularInline):
    model = Revision
    fields = ("number", "honest_status", "message", "created", "updated")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False
    ordering = ["-number"]

    def has_add_permission(self, request, obj=None):
        return False



def _run(model_admin, request, operation, success: str) -> None:
    try:
        operation()
    except ServiceError as exc:
        model_admin.message_user(request, exc.detail, messages.ERROR)
    else:
        model_admin.message_user(request, success, messages.SUCCESS)


@admin.register(Deployment)
class DeploymentAdmin(ObjectButtonsMixin, ReadOnlyAdmin):
    list_display = ["name", "workspace", "source", "status", "serving", "latest", "open_link", "created"]
    list_filter = [health_filter(failed=("Latest revision failed", selectors.deployment_list_failing)), "status",
                   "source", "workspace"]
    search_fields = ["name", "=id"]
    list_select_related = ["workspace", "active_revision", "latest_revision"]
    # The database's name and role, never its password.
    fields = ("id", "name", "workspace", "source", "deployment_type", "status", "url", "serving", "latest",
              "database", "secret_names", "source_config", "tracing_project_id", "created_at", "updated_at")
    readonly_fields = fields
    inlines = [RevisionInline]
    # No admin delete: deletion goes through the pipeline (the button and action), which stops processes.
    actions = ["redeploy_active", "delete_deployments"]

    @admin.display(description="URL")
    def open_link(self, obj):
        url = services.custom_url(obj)
        return format_html('<a href="{}" class="keep-whole" title="{}" target="_blank" rel="noopener">open ↗</a>',
                           url, url)

    @admin.display(description="URL")
    def url(self, obj):
        url = services.custom_url(obj)
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    @admin.display(description="database")
    def database(self, obj):
        if not obj.database_name:
            return "- (created before its first revision starts)"
        return f"{obj.database_name} (role {obj.database_role})" if obj.database_role else obj.database_name

    @admin.display(description="serving")
    def serving(self, obj):
        if not obj.active_revision:
            return "-"
        link = reverse("admin:deployments_revision_change", args=[obj.active_revision_id])
        return format_html('<a href="{}">#{}</a>', link, obj.active_revision.number)

    @admin.display(description="latest revision")
    def latest(self, obj):
        if not obj.latest_revision:
            return "-"
        link = reverse("admin:deployments_revision_change", args=[obj.latest_revision_id])
        return format_html('<a href="{}">#{}</a> {}', link, obj.latest_revision.number,
                           revision_badge(obj.latest_revision, obj.active_revision_id))

    created = ago_column("created_at", "created")

    # --- the deployment's own page --------------------------------------------------------------------------

    def get_object_buttons(self, request, obj):
        if obj.status == Deployment.Status.AWAITING_DELETE:
            return []
        buttons = [ObjectLink("Open", services.custom_url(obj), external=True)]
        revision = obj.active_revision or obj.latest_revision
        if revision is not None:
            buttons.append(ObjectButton("redeploy", "Redeploy"))
        buttons.append(ObjectButton("delete", "Delete", danger=True, confirm=(
            f"Delete the deployment “{obj.name}”? Its URL stops answering at once, a worker then stops its "
            "processes and removes its revisions and logs. Its tracing project and traces stay.")))
        return buttons

    def button_redeploy(self, request, obj):
        revision = obj.active_revision or obj.latest_revision
        deployment = services.revision_redeploy(deployment=obj, revision=revision)
        return (f"Deployment “{obj.name}”: redeploy of revision #{revision.number} queued as revision "
                f"#{deployment.latest_revision.number}.")

    def button_delete(self, request, obj):
        services.deployment_delete(deployment=obj)
        return f"Deployment “{obj.name}”: deletion queued (its URL no longer answers)."

    # --- list actions ------------------------------------------------------------------------------------------

    @admin.action(description="Redeploy the active (or latest) revision")
    def redeploy_active(self, request, queryset):
        for deployment in queryset:
            revision = deployment.active_revision or deployment.latest_revision
            if revision is None:
                self.message_user(request, f"{deployment.name}: nothing to redeploy.", messages.WARNING)
                continue
            _run(self, request, lambda d=deployment, r=revision: services.revision_redeploy(deployment=d, revision=r),
                 f"{deployment.name}: redeploy queued.")

    @admin.action(description="Delete (stops the served processes)")
    def delete_deployments(self, request, queryset):
        for deployment in queryset:
            _run(self, request, lambda d=deployment: services.deployment_delete(deployment=d),
                 f"{deployment.name}: deletion queued.")


@admin.register(Revision)
class RevisionAdmin(RevisionColumns, ObjectButtonsMixin, ReadOnlyAdmin):
    list_display = ["__str__", "honest_status", "message", "created", "updated"]
    list_filter = [health_filter(failed=("Failed (still the latest)", selectors.revision_list_failed)), "status",
                   "source", "deployment__workspace"]
    search_fields = ["=id", "deployment__name"]
    list_select_related = ["deployment"]
    fields = ("id", "deployment", "number", "honest_status", "whole_message", "source", "repo_url",
              "repo_ref", "repo_commit_sha", "langgraph_config_path", "source_tarball_path", "serving_host",
              "serving_replicas", "created_at", "updated_at", "build_log", "deploy_log")
    readonly_fields = fields
    actions = ["redeploy", "interrupt"]

    @admin.display(description="message")
    def whole_message(self, obj):
        """The revision's own page shows its status message whole, however long."""
        return format_html('<span class="whole-message">{}</span>',
                           revision_message(obj, obj.deployment.active_revision_id) or "-")

    def _log(self, obj, log_type: str):
        entries = list(obj.logs.filter(type=log_type).order_by("-id")[:LOG_LINES])[::-1]
        if not entries:
            return "-"
        return _log_lines(entries)

    @admin.display(description=f"build log (last {LOG_LINES} lines)")
    def build_log(self, obj):
        return self._log(obj, RevisionLog.Type.BUILD)

    @admin.display(description=f"deploy log (last {LOG_LINES} lines)")
    def deploy_log(self, obj):
        return self._log(obj, RevisionLog.Type.DEPLOY)

    # --- the revision's own page: Logs ------------------------------------------------------------------------

    def get_object_buttons(self, request, obj):
        return [ObjectLink("Logs", reverse("admin:deployments_revision_logs", args=[obj.pk]))]

    def get_urls(self):
        logs = self.admin_site.admin_view(self.logs_view)
        return [path("<path:object_id>/logs/", logs, name="deployments_revision_logs"), *super().get_urls()]

    def logs_view(self, request, object_id):
        revision = self.get_object(request, unquote(object_id))
        if revision is None:
            raise Http404("No such revision.")
        if not self.has_view_permission(request, revision):
            raise PermissionDenied
        log_type = request.GET.get("type") if request.GET.get("type") in RevisionLog.Type.values else "build"
        before = request.GET.get("before")
        query = selectors.LogQuery(type=log_type, limit=LOG_PAGE, order="desc",
                                   offset=before if (before or "").isdigit() else None)
        page, cursor = selectors.log_page(revisions=[revision], params=query)
        context = {**self.admin_site.each_context(request), "title": f"Logs of {revision}", "opts": self.opts,
                   "app_label": self.opts.app_label, "object": revision, "log_type": log_type,
                   "types": RevisionLog.Type.values, "lines": _log_lines(page[::-1]) if page else None,
                   "older": cursor if len(page) == LOG_PAGE else None,
                   "change_url": reverse("admin:deployments_revision_change", args=[revision.pk])}
        return TemplateResponse(request, "admin/deployments/revision/logs.html", context)

    # --- list actions ------------------------------------------------------------------------------------------

    @admin.action(description="Redeploy (as a new revision)")
    def redeploy(self, request, queryset):
        for revision in queryset.select_related("deployment"):
            _run(self, request, lambda r=revision: services.revision_redeploy(deployment=r.deployment, revision=r),
                 f"{revision}: redeploy queued.")

    @admin.action(description="Interrupt")
    def interrupt(self, request, queryset):
        for revision in queryset:
            if states.is_terminal(revision.status):
                self.message_user(request, f"{revision}: already {revision.status}.", messages.WARNING)
                continue
            _run(self, request, lambda r=revision: services.revision_interrupt(revision=r), f"{revision}: interrupted.")


def _log_lines(entries):
    rows = format_html_join("\n", '<span class="log-{}">{} {:<8} {}</span>',
                            ((e.level.lower(), e.timestamp.strftime("%H:%M:%S"), e.level, e.message)
                             for e in entries))
    return format_html('<pre class="log">{}</pre>', rows)

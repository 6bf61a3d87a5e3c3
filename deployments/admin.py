"""Deployments and revisions in the admin: status, logs, the active revision, redeploy and interrupt.

Read-mostly: changes go through the API's services. Secret values are never shown.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from core.admin import ReadOnlyAdmin
from core.exceptions import ServiceError
from deployments import services, states
from deployments.models import Deployment, Revision, RevisionLog

LOG_LINES = 300


class RevisionInline(admin.TabularInline):
    model = Revision
    fields = ["number", "status", "status_message", "created_at", "updated_at"]
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False
    ordering = ["-number"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Deployment)
class DeploymentAdmin(ReadOnlyAdmin):
    list_display = ["name", "workspace", "source", "status", "active_revision_display", "latest_revision_display",
                    "created_at"]
    list_filter = ["status", "source", "workspace"]
    search_fields = ["name", "id"]
    list_select_related = ["workspace", "active_revision", "latest_revision"]
    fields = ["id", "name", "workspace", "source", "deployment_type", "status", "url", "active_revision_display",
              "latest_revision_display", "secret_names", "source_config", "tracing_project_id", "created_at",
              "updated_at"]
    readonly_fields = fields
    inlines = [RevisionInline]
    # No admin delete: deletion goes through the pipeline (the action below), which stops processes.
    actions = ["redeploy_active", "delete_deployments"]

    @admin.display(description="URL")
    def url(self, obj):
        return services.custom_url(obj)

    @admin.display(description="active revision")
    def active_revision_display(self, obj):
        return f"#{obj.active_revision.number}" if obj.active_revision else "-"

    @admin.display(description="latest revision")
    def latest_revision_display(self, obj):
        return f"#{obj.latest_revision.number} {obj.latest_revision.status}" if obj.latest_revision else "-"

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


def _run(model_admin, request, operation, success: str) -> None:
    try:
        operation()
    except ServiceError as exc:
        model_admin.message_user(request, exc.detail, messages.ERROR)
    else:
        model_admin.message_user(request, success, messages.SUCCESS)


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "deployment", "number", "status", "is_active", "created_at", "updated_at"]
    list_filter = ["status", "source"]
    search_fields = ["id", "deployment__name"]
    list_select_related = ["deployment"]
    fields = ["id", "deployment", "number", "status", "status_message", "is_active", "source", "repo_url",
              "repo_ref", "repo_commit_sha", "langgraph_config_path", "source_tarball_path", "serving_host",
              "serving_port", "serving_pid", "created_at", "updated_at", "build_log", "deploy_log"]
    readonly_fields = fields
    actions = ["redeploy", "interrupt"]

    @admin.display(boolean=True, description="active")
    def is_active(self, obj):
        return obj.deployment.active_revision_id == obj.id

    def _log(self, obj, log_type: str):
        entries = list(obj.logs.filter(type=log_type).order_by("-id")[:LOG_LINES])[::-1]
        if not entries:
            return "-"
        rows = format_html_join("\n", "{} {:<8} {}", ((e.timestamp.strftime("%H:%M:%S"), e.level, e.message)
                                                      for e in entries))
        return format_html('<pre style="max-height:30em;overflow:auto;white-space:pre-wrap">{}</pre>', rows)

    @admin.display(description=f"build log (last {LOG_LINES} lines)")
    def build_log(self, obj):
        return self._log(obj, RevisionLog.Type.BUILD)

    @admin.display(description=f"deploy log (last {LOG_LINES} lines)")
    def deploy_log(self, obj):
        return self._log(obj, RevisionLog.Type.DEPLOY)

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

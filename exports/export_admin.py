"""Admin for bulk export jobs: status and progress of exports and their runs, cancel and retry.

Everything is read-only here; the two actions go through the services, like the API.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q, Sum

from core.admin import ReadOnlyAdmin
from core.exceptions import ServiceError
from exports import export_services
from exports.models import BulkExport, BulkExportRun, ExportStatus


class RunInline(admin.TabularInline):
    model = BulkExportRun
    extra = 0
    can_delete = False
    fields = readonly_fields = ["start_time", "end_time", "status", "rows_written", "files", "retry_number",
                                "errors", "latest_cursor", "started_at", "finished_at"]
    ordering = ["start_time"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="files")
    def files(self, obj):
        return len(obj.exported_files)


def _run_actions(modeladmin, request, exports, action) -> None:
    for export in exports:
        try:
            message = action(export)
        except ServiceError as exc:
            modeladmin.message_user(request, f"{export}: {exc.detail}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{export}: {message}", messages.SUCCESS)


def _cancel(export: BulkExport) -> str:
    export_services.export_cancel(export=export)
    return "cancelled (running runs stop at their next batch)."


@admin.register(BulkExport)
class BulkExportAdmin(ReadOnlyAdmin):
    list_display = ["id", "workspace", "status", "session", "destination", "start_time", "end_time",
                    "interval_hours", "run_count", "rows_written", "files", "retries", "failed_runs", "created_at",
                    "finished_at"]
    list_filter = ["status", "workspace", "format_version", "compression"]
    list_select_related = ["workspace", "session", "destination"]
    search_fields = ["id", "session__name", "destination__display_name"]
    readonly_fields = ["id", "workspace", "destination", "session", "status", "start_time", "end_time", "filter",
                       "format", "format_version", "compression", "interval_hours", "export_fields",
                       "source_bulk_export", "next_window", "created_at", "updated_at", "finished_at"]
    inlines = [RunInline]
    actions = ["cancel_exports", "retry_exports"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _runs=Count("runs"), _rows=Sum("runs__rows_written"), _retries=Sum("runs__retry_number"),
            _failed=Count("runs", filter=Q(runs__status__in=[ExportStatus.FAILED, ExportStatus.TIMED_OUT])))

    @admin.display(description="runs")
    def run_count(self, obj):
        return obj._runs

    @admin.display(description="rows written")
    def rows_written(self, obj):
        return obj._rows or 0

    @admin.display(description="files")
    def files(self, obj):
        return sum(len(files) for files in obj.runs.values_list("exported_files", flat=True))

    @admin.display(description="retries")
    def retries(self, obj):
        return obj._retries or 0

    @admin.display(description="failed runs")
    def failed_runs(self, obj):
        return obj._failed

    @admin.action(description="Cancel selected exports")
    def cancel_exports(self, request, queryset):
        _run_actions(self, request, queryset, _cancel)

    @admin.action(description="Retry the failed runs of selected exports")
    def retry_exports(self, request, queryset):
        _run_actions(self, request, queryset,
                     lambda export: f"{export_services.export_retry(export=export)} run(s) queued again.")


@admin.register(BulkExportRun)
class BulkExportRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "bulk_export", "day", "status", "rows_written", "files", "retry_number", "error",
                    "destination", "project", "started_at", "finished_at"]
    list_filter = ["status"]
    list_select_related = ["bulk_export__destination", "bulk_export__session"]
    search_fields = ["id", "bulk_export__id"]
    readonly_fields = ["id", "bulk_export", "start_time", "end_time", "status", "retry_number", "errors",
                       "credential_version", "started_at", "finished_at", "rows_written", "exported_files",
                       "latest_cursor", "pending_key", "created_at", "updated_at"]
    actions = ["cancel_exports", "retry_runs"]

    @admin.display(description="day", ordering="start_time")
    def day(self, obj):
        return obj.start_time.date()

    @admin.display(description="files")
    def files(self, obj):
        return len(obj.exported_files)

    @admin.display(description="last error")
    def error(self, obj):
        if not obj.errors:
            return ""
        return obj.errors[max(obj.errors, key=lambda k: int(k.rsplit("_", 1)[-1]))]

    @admin.display(description="destination")
    def destination(self, obj):
        return obj.bulk_export.destination

    @admin.display(description="project")
    def project(self, obj):
        return obj.bulk_export.session

    @admin.action(description="Cancel the exports of selected runs")
    def cancel_exports(self, request, queryset):
        exports = BulkExport.objects.filter(id__in=queryset.values_list("bulk_export_id", flat=True))
        _run_actions(self, request, exports, _cancel)

    @admin.action(description="Retry selected runs (failed or timed out)")
    def retry_runs(self, request, queryset):
        by_export: dict = {}
        for run in queryset.select_related("bulk_export"):
            by_export.setdefault(run.bulk_export, []).append(run.id)
        _run_actions(self, request, by_export,
                     lambda export: f"{export_services.export_retry(export=export, run_ids=by_export[export])} "
                                    "run(s) queued again.")

"""Admin for bulk exports: status and progress of exports and their export runs, cancel and retry.

Everything is read-only here; the buttons and actions go through the services, like the API.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q, Sum
from django.urls import reverse
from django.utils.html import format_html

from core.admin import (
    ObjectButton,
    ObjectButtonsMixin,
    ReadOnlyAdmin,
    ago_column,
    clipped,
    health_filter,
    short_id,
    short_id_link,
)
from core.exceptions import ServiceError
from exports.bulk_exports import selectors, services
from exports.bulk_exports.models import (
    FAILED_OR_TIMED_OUT,
    UNFINISHED_EXPORT,
    BulkExport,
    BulkExportRun,
    ExportStatus,
)

STATUS_CLASS: dict[str, str] = {ExportStatus.COMPLETED: "ok", ExportStatus.FAILED: "bad", ExportStatus.TIMED_OUT: "bad",
                ExportStatus.CANCELLED: "off", ExportStatus.RUNNING: "busy", ExportStatus.CREATED: "busy",
                ExportStatus.INTERVAL_SCHEDULED: "busy"}


def status_badge(status: str):
    return format_html('<span class="status status-{}">{}</span>', STATUS_CLASS.get(status, "off"), status)


def last_error(export_run: BulkExportRun) -> str:
    if not export_run.errors:
        return ""
    return export_run.errors[max(export_run.errors, key=lambda k: int(k.rsplit("_", 1)[-1]))]


class ExportRunColumns:
    """The columns an export run's row shows, in the export's inline and in the export runs' list."""

    error_width = 50  # characters of the last error

    @admin.display(description="status", ordering="status")
    def run_status(self, obj):
        return status_badge(obj.status)

    @admin.display(description="files")
    def files(self, obj):
        return len(obj.exported_files)

    @admin.display(description="last error")
    def error(self, obj):
        return clipped(last_error(obj), self.error_width)


class ExportRunInline(ExportRunColumns, admin.TabularInline):
    model = BulkExportRun
    extra = 0
    can_delete = False
    show_change_link = True
    fields = readonly_fields = ("day", "run_status", "rows_written", "files", "retry_number", "error", "finished")
    ordering = ["start_time"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="day")
    def day(self, obj):
        return obj.start_time.date()

    finished = ago_column("finished_at", "finished")


def _run_actions(modeladmin, request, exports, action) -> None:
    for export in exports:
        try:
            message = action(export)
        except ServiceError as exc:
            modeladmin.message_user(request, f"{export}: {exc.detail}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{export}: {message}", messages.SUCCESS)


def _cancel(export: BulkExport) -> str:
    services.export_cancel(export=export)
    return "cancelled (running export runs stop at their next batch)."


def _retried(count: int) -> str:
    return f"{count} export run{'' if count == 1 else 's'} queued again."


@admin.register(BulkExport)
class BulkExportAdmin(ObjectButtonsMixin, ReadOnlyAdmin):
    list_display = ["short", "export_status", "workspace", "project", "destination_name", "window", "progress",
                    "created"]
    list_display_links = None
    list_filter = [health_filter(failing=("Failing", selectors.export_list_failing)), "status", "workspace",
                   ("destination", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["workspace", "session", "destination"]
    search_fields = ["=id", "session__name", "destination__display_name"]
    fields = readonly_fields = ("id", "workspace", "destination", "session", "status", "start_time", "end_time",
                                "filter", "format", "format_version", "compression", "interval_hours",
                                "export_fields", "source_bulk_export", "next_window", "created_at", "updated_at",
                                "finished_at")
    inlines = [ExportRunInline]
    actions = ["cancel_exports", "retry_exports"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _export_runs=Count("export_runs"), _rows=Sum("export_runs__rows_written"),
            _done=Count("export_runs", filter=Q(export_runs__status=ExportStatus.COMPLETED)),
            _failed=Count("export_runs", filter=Q(export_runs__status__in=FAILED_OR_TIMED_OUT)))

    @admin.display(description="export")
    def short(self, obj):
        return short_id_link(obj)

    @admin.display(description="status", ordering="status")
    def export_status(self, obj):
        return status_badge(obj.status)

    @admin.display(description="project", ordering="session__name")
    def project(self, obj):
        return clipped(obj.session.name, 30)

    @admin.display(description="destination", ordering="destination__display_name")
    def destination_name(self, obj):
        return clipped(obj.destination.display_name, 36)

    @admin.display(description="window", ordering="start_time")
    def window(self, obj):
        start = f"{obj.start_time:%d %b %Y}"
        if obj.is_scheduled:
            return format_html('every {} h from <span class="keep-whole">{}</span>', obj.interval_hours, start)
        return format_html('<span class="keep-whole">{}</span> → <span class="keep-whole">{}</span>',
                           start, f"{obj.end_time:%d %b %Y}")

    @admin.display(description="progress")
    def progress(self, obj):
        text = f"{obj._done}/{obj._export_runs} export runs · {obj._rows or 0} rows"
        if obj._failed:
            return format_html('{} · <span class="status status-bad">{} failed</span>', text, obj._failed)
        return text

    created = ago_column("created_at", "created")

    # --- the export's own page ------------------------------------------------------------------------------

    def get_object_buttons(self, request, obj):
        buttons = []
        if obj.status in UNFINISHED_EXPORT:
            buttons.append(ObjectButton("cancel", "Cancel", danger=True, confirm=(
                "Cancel this export? Its waiting export runs end at once, running ones stop at their next batch; files "
                "already written stay in the bucket. A cancelled export cannot be retried.")))
        retriable = obj.status != ExportStatus.CANCELLED and not obj.is_scheduled
        if retriable and obj.export_runs.filter(status__in=FAILED_OR_TIMED_OUT).exists():
            buttons.append(ObjectButton("retry", "Retry failed export runs"))
        return buttons

    def button_cancel(self, request, obj):
        return f"{obj}: {_cancel(obj)}"

    def button_retry(self, request, obj):
        return f"Export {obj.id}: {_retried(services.export_retry(export=obj))}"

    # --- list actions -----------------------------------------------------------------------------------------

    @admin.action(description="Cancel selected exports")
    def cancel_exports(self, request, queryset):
        _run_actions(self, request, queryset, _cancel)

    @admin.action(description="Retry the failed export runs of selected exports")
    def retry_exports(self, request, queryset):
        _run_actions(self, request, queryset, lambda export: _retried(services.export_retry(export=export)))


@admin.register(BulkExportRun)
class BulkExportRunAdmin(ExportRunColumns, ObjectButtonsMixin, ReadOnlyAdmin):
    error_width = 40
    list_display = ["short", "export", "day", "run_status", "rows_written", "files", "retries", "error",
                    "started"]
    list_display_links = None
    list_filter = [health_filter(stuck=("Stuck past its lease", selectors.export_run_list_stuck)), "status",
                   ("bulk_export__workspace", admin.RelatedOnlyFieldListFilter),
                   ("bulk_export__destination", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["bulk_export__destination", "bulk_export__session"]
    search_fields = ["=id", "=bulk_export__id"]
    fields = readonly_fields = ("id", "bulk_export", "start_time", "end_time", "status", "retry_number", "errors",
                                "credential_version", "job_id", "started_at", "finished_at", "rows_written",
                                "exported_files", "latest_cursor", "pending_key", "created_at", "updated_at")
    actions = ["cancel_exports", "retry_export_runs"]

    @admin.display(description="export run")
    def short(self, obj):
        return short_id_link(obj)

    @admin.display(description="export")
    def export(self, obj):
        url = reverse("admin:bulk_exports_bulkexport_change", args=[obj.bulk_export_id])
        return short_id(obj.bulk_export_id, url)

    @admin.display(description="day", ordering="start_time")
    def day(self, obj):
        return format_html('<span class="keep-whole">{}</span>', f"{obj.start_time:%Y-%m-%d}")

    @admin.display(description="retries", ordering="retry_number")
    def retries(self, obj):
        return obj.retry_number

    started = ago_column("started_at", "started")

    # --- the export run's own page ----------------------------------------------------------------------------

    def get_object_buttons(self, request, obj):
        export = obj.bulk_export
        if export.status not in UNFINISHED_EXPORT:
            return []
        others = export.export_runs.unfinished().exclude(id=obj.id).count()
        return [ObjectButton("cancel", "Cancel", danger=True, confirm=(
            f"Export runs are cancelled with their export, as in the API: this cancels export {export.id} — this "
            f"export run and {others} other unfinished one{'' if others == 1 else 's'}. Waiting ones end at once, "
            "running ones stop at their next batch; files already written stay in the bucket."))]

    def button_cancel(self, request, obj):
        return f"{obj.bulk_export}: {_cancel(obj.bulk_export)}"

    # --- list actions -----------------------------------------------------------------------------------------

    @admin.action(description="Cancel the exports of selected export runs")
    def cancel_exports(self, request, queryset):
        exports = BulkExport.objects.filter(id__in=queryset.values_list("bulk_export_id", flat=True))
        _run_actions(self, request, exports, _cancel)

    @admin.action(description="Retry selected export runs (failed or timed out)")
    def retry_export_runs(self, request, queryset):
        by_export: dict = {}
        for export_run in queryset.select_related("bulk_export"):
            by_export.setdefault(export_run.bulk_export, []).append(export_run.id)
        _run_actions(self, request, by_export,
                     lambda export: _retried(services.export_retry(export=export, export_run_ids=by_export[export])))

"""Read-only admin for the trace store: projects, runs, a run's tree, its inputs and outputs."""

from __future__ import annotations

import json

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.admin import ReadOnlyAdmin, ago_column, id_column
from tracing import selectors
from tracing.models import Run, TracingProject

TREE_LIMIT = 500


@admin.register(TracingProject)
class TracingProjectAdmin(ReadOnlyAdmin):
    list_display = ["name", "workspace", "short", "created", "runs_link"]
    list_filter = ["workspace"]
    list_select_related = ["workspace"]
    search_fields = ["name", "=id"]
    fields = ("id", "name", "workspace", "created_at", "runs_link")
    readonly_fields = fields

    short = id_column("id", "id")

    created = ago_column("created_at", "created")

    @admin.display(description="runs")
    def runs_link(self, obj):
        url = reverse("admin:tracing_run_changelist") + f"?session__id__exact={obj.id}"
        return format_html('<a href="{}">runs</a>', url)


def _json_field(field: str):
    """A read-only field of the run page showing the JSON `field` indented, in a scrolling box."""

    @admin.display(description=field)
    def pretty(self, obj):
        return format_html("<pre style='white-space: pre-wrap; max-height: 40em; overflow: auto'>{}</pre>",
                           json.dumps(getattr(obj, field), indent=2, sort_keys=True, default=str))

    return pretty


# The run page's sections: a title (None for the first) and the fields it shows.
_RUN_SECTIONS: list[tuple[str | None, tuple[str, ...]]] = [
    (None, ("id", "name", "run_type", "status", "session", "workspace", "start_time", "end_time", "first_token_time",
            "error_text")),
    ("Trace", ("tree", "trace_id", "parent_run_id", "dotted_order", "is_root", "trace_tier")),
    ("Data", ("inputs_json", "outputs_json", "extra_json", "events_json", "tags", "reference_example_id",
              "feedback_stats")),
    ("Usage", ("total_tokens", "prompt_tokens", "completion_tokens", "total_cost", "prompt_cost", "completion_cost")),
]


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["name", "run_type", "status", "session", "started", "latency", "total_tokens", "is_root"]
    list_filter = ["status", "run_type", "is_root", ("start_time", admin.DateFieldListFilter), "session"]
    list_select_related = ["session"]
    search_fields = ["=id", "=trace_id", "name"]
    ordering = ["-start_time"]
    date_hierarchy = "start_time"
    # Counting every run for the pagination line is a full scan on a large store.
    show_full_result_count = False
    fieldsets = [(title, {"fields": names}) for title, names in _RUN_SECTIONS]
    readonly_fields = [name for _, names in _RUN_SECTIONS for name in names]

    started = ago_column("start_time", "started")

    @admin.display(description="latency")
    def latency(self, obj):
        if obj.end_time is None:
            return "-"
        return f"{(obj.end_time - obj.start_time).total_seconds():.3f} s"

    @admin.display(description="error")
    def error_text(self, obj):
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.error) if obj.error else "-"

    @admin.display(description="run tree")
    def tree(self, obj):
        """The whole trace, indented by depth, this run in bold."""
        rows = []
        runs = selectors.run_tree(run=obj, limit=TREE_LIMIT + 1)
        for run in runs[:TREE_LIMIT]:
            depth = run.dotted_order.count(".")
            url = reverse("admin:tracing_run_change", args=[run.id])
            label = f"{run.name} ({run.run_type}, {run.status})"
            weight = "bold" if run.id == obj.id else "normal"
            rows.append((depth * 1.5, weight, url, label))
        more = f"… and more: the tree shows the first {TREE_LIMIT} runs." if len(runs) > TREE_LIMIT else ""
        return format_html("<div>{}</div>{}", format_html_join(
            "", '<div style="margin-left: {}em; font-weight: {}"><a href="{}">{}</a></div>', rows), more)

    inputs_json = _json_field("inputs")
    outputs_json = _json_field("outputs")
    extra_json = _json_field("extra")
    events_json = _json_field("events")

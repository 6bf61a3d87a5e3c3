from __future__ import annotations

from django.urls import path

from core.views import method_routes
from exports.bulk_exports import api

app_name = "bulk_exports"

urlpatterns = [
    path("api/v1/bulk-exports",
         method_routes(get=api.BulkExportListApi, post=api.BulkExportCreateApi), name="bulk-exports"),
    # Before the {bulk_export_id} routes, and `runs` is no UUID anyway: never read as an export id.
    path("api/v1/bulk-exports/runs", api.BulkExportRunListBySourceApi.as_view(), name="bulk-export-runs"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>",
         method_routes(get=api.BulkExportDetailApi, patch=api.BulkExportCancelApi),
         name="bulk-export-detail"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>/runs", api.BulkExportRunListApi.as_view(),
         name="bulk-export-run-list"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>/runs/<uuid:run_id>", api.BulkExportRunDetailApi.as_view(),
         name="bulk-export-run-detail"),
]

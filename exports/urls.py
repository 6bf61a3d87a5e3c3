from __future__ import annotations

from django.urls import path

from core.views import method_routes
from exports import api, export_api

app_name = "exports"

urlpatterns = [
    path("api/v1/bulk-exports/destinations",
         method_routes(get=api.DestinationListApi, post=api.DestinationCreateApi), name="destinations"),
    path("api/v1/bulk-exports/destinations/<uuid:destination_id>",
         method_routes(get=api.DestinationDetailApi, patch=api.DestinationCredentialsUpdateApi,
                       delete=api.DestinationDeleteApi),
         name="destination-detail"),
    path("api/v1/bulk-exports",
         method_routes(get=export_api.BulkExportListApi, post=export_api.BulkExportCreateApi), name="bulk-exports"),
    # Before the {bulk_export_id} routes, and `runs` is no UUID anyway: never read as an export id.
    path("api/v1/bulk-exports/runs", export_api.BulkExportRunsBySourceApi.as_view(), name="bulk-export-runs"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>",
         method_routes(get=export_api.BulkExportDetailApi, patch=export_api.BulkExportCancelApi),
         name="bulk-export-detail"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>/runs", export_api.BulkExportRunListApi.as_view(),
         name="bulk-export-run-list"),
    path("api/v1/bulk-exports/<uuid:bulk_export_id>/runs/<uuid:run_id>", export_api.BulkExportRunDetailApi.as_view(),
         name="bulk-export-run-detail"),
]

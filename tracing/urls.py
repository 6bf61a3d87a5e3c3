from __future__ import annotations

from django.urls import path

from core.views import method_routes
from tracing import api

app_name = "tracing"

# The SDK talks to whatever base URL LANGSMITH_ENDPOINT names: a bare host or one ending in /api/v1.
urlpatterns = []
for prefix, label in (("", ""), ("api/v1/", "v1-")):
    urlpatterns += [
        path(f"{prefix}info", api.InfoApi.as_view(), name=f"{label}info"),
        path(f"{prefix}runs/batch", api.RunsBatchApi.as_view(), name=f"{label}runs-batch"),
        path(f"{prefix}runs/multipart", api.RunsMultipartApi.as_view(), name=f"{label}runs-multipart"),
        path(f"{prefix}runs", api.RunCreateApi.as_view(), name=f"{label}runs"),
        path(f"{prefix}runs/<uuid:run_id>", method_routes(get=api.RunDetailApi, patch=api.RunUpdateApi),
             name=f"{label}run-detail"),
    ]
urlpatterns += [
    path("api/v1/sessions", api.SessionListApi.as_view(), name="sessions"),
    path("api/v1/sessions/<uuid:session_id>", api.SessionDetailApi.as_view(), name="session-detail"),
]

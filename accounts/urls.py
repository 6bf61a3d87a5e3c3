from __future__ import annotations

from django.urls import path

from accounts import api
from core.views import method_routes

app_name = "accounts"

urlpatterns = [
    path("api/v1/workspaces", method_routes(get=api.WorkspaceListApi, post=api.WorkspaceCreateApi),
         name="workspaces"),
    path("api/v1/workspaces/current", api.WorkspaceCurrentApi.as_view(), name="workspace-current"),
    path("api/v1/workspaces/<uuid:workspace_id>", api.WorkspaceDetailApi.as_view(), name="workspace-detail"),
]

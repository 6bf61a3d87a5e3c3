from __future__ import annotations

from django.urls import path, re_path, register_converter
from django.urls.converters import StringConverter

from core.views import method_routes
from deployments import api, api_revision_logs, api_uploads, pages, proxy

app_name = "deployments"



class UuidTextConverter(StringConverter):
    """Matches like `str`: the views answer a non-UUID id with a 422 (FastAPI's behaviour), not a 404.
    The schema declares these parameters as UUIDs (SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"])."""


register_converter(UuidTextConverter, "uuidtext")

# Paths are slash-less and never redirected: LangChain's CLI treats any 3xx as an error.
D = "v2/deployments/<uuidtext:deployment_id>"
R = f"{D}/revisions/<uuidtext:revision_id>"

urlpatterns = [
    path("v2/deployments", method_routes(get=api.DeploymentListApi, post=api.DeploymentCreateApi,
                                         delete=api.DeploymentBulkDeleteApi), name="list"),
    re_path(r"^v2/deployments/uploads/(?P<object_path>.+)$", api_uploads.UploadPutApi.as_view(), name="upload"),
    path(D, method_routes(get=api.DeploymentDetailApi, patch=api.DeploymentUpdateApi,
                          delete=api.DeploymentDeleteApi), name="detail"),
    path(f"{D}/upload-url", api_uploads.UploadUrlCreateApi.as_view(), name="upload-url"),
    path(f"{D}/revisions", method_routes(get=api.RevisionListApi, post=api.RevisionCreateApi), name="revisions"),
    path(R, api.RevisionDetailApi.as_view(), name="revision"),
    path(f"{R}/redeploy", api.RevisionRedeployApi.as_view(), name="redeploy"),
    path(f"{R}/interrupt", api.RevisionInterruptApi.as_view(), name="interrupt"),
    path(f"{R}/logs", api_revision_logs.RevisionLogsApi.as_view(), name="logs"),
    # The log endpoints langgraph-cli calls ("project" is the deployment).
    path("v1/projects/<uuidtext:project_id>/revisions/<uuidtext:revision_id>/build_logs",
         api_revision_logs.ProjectBuildLogsApi.as_view(), name="project-build-logs"),
    path("v1/projects/<uuidtext:project_id>/revisions/<uuidtext:revision_id>/deploy_logs",
         api_revision_logs.ProjectRevisionDeployLogsApi.as_view(), name="project-revision-deploy-logs"),
    path("v1/projects/<uuidtext:project_id>/deploy_logs", api_revision_logs.ProjectDeployLogsApi.as_view(),
         name="project-deploy-logs"),
    # The "View status" link `langgraph deploy` prints: the deployment's page in the admin.
    path("o/<uuid:tenant_id>/host/deployments/<uuid:deployment_id>", pages.deployment_status_page,
         name="status-page"),
    # The served agents: {PUBLIC_BASE_URL}/deployments/{id} is each deployment's stable URL.
    re_path(r"^deployments/(?P<deployment_id>[^/]+)(?P<subpath>/.*)?$", proxy.deployment_proxy, name="proxy"),
]

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from core.views import ApiReferencePage, favicon, healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The service's REST API. Not /api/docs/: /api/docs (no slash) is the Agent Server API's page (agentserver.urls),
    # where `langgraph dev` has it under the API's mount; the old address redirects.
    path("api/reference/", ApiReferencePage.as_view(url_name="schema"), name="swagger-ui"),
    path("api/docs/", RedirectView.as_view(pattern_name="swagger-ui", permanent=True)),
    path("", include("accounts.urls")),
    path("", include("exports.destinations.urls")),
    path("", include("exports.bulk_exports.urls")),
    path("", include("tracing.urls")),
    path("", include("agentauth.urls")),
    path("", include("deployments.urls")),
    path("", include("chat.page_urls")),
    path("api/", include("chat.api_urls")),
    # The Agent Server API of the service's own deep agent, beside the examples' chat routes (chat/routing.py).
    path("api/", include("agentserver.urls")),
]

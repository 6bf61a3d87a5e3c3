"""GET /openapi.json and GET /docs: the Agent Server API's own document and its reference page.

The page is Swagger UI from drf-spectacular-sidecar, served by the page itself (`docs?asset=…`) so that it works
offline and wherever the API is mounted: at a serving process's root, under /api, behind a deployment's URL.
"""

from __future__ import annotations

from django.contrib.staticfiles import finders
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from agentserver.api import OkApi
from agentserver.openapi_document import document_for
from core.rest_errors import error_response
from core.views import ApiReferencePage

# Relative URLs: the browser resolves them against the page's own address.
ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-standalone-preset.js": "text/javascript",
    "favicon-32x32.png": "image/png",
}


class OpenApiDocumentApi(OkApi):
    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="openapi_get")
    def get(self, request):
        mount = request.path.removesuffix("openapi.json")
        return Response(document_for(mount=mount, forwarded_prefix=request.headers.get("X-Forwarded-Prefix")))


class DocsApi(ApiReferencePage):
    # Not in the service's REST schema (core.openapi_generation), like every view of agentserver.urls.
    documented_separately = True
    title = "Agent Server API"
    url = "openapi.json"

    @extend_schema(operation_id="docs_get", responses={(200, "text/html"): OpenApiTypes.STR, 404: None},
                   parameters=[OpenApiParameter("asset", str, enum=list(ASSETS),
                                                description="One of the page's scripts, styles or icon.")])
    def get(self, request, *args, **kwargs):
        if "asset" in request.GET:
            return self.asset(request.GET["asset"])
        return super().get(request, *args, **kwargs)

    @staticmethod
    def asset(name: str):
        content_type = ASSETS.get(name)
        found = finders.find(f"drf_spectacular_sidecar/swagger-ui-dist/{name}") if content_type else None
        if found is None:
            return error_response(404, "Not Found")
        response = FileResponse(open(found, "rb"), content_type=content_type)
        response["Cache-Control"] = "public, max-age=86400"
        return response

    @staticmethod
    def _swagger_ui_resource(filename):
        return f"docs?asset={filename}"

    @staticmethod
    def _swagger_ui_favicon():
        return "docs?asset=favicon-32x32.png"

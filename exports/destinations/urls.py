from __future__ import annotations

from django.urls import path

from core.views import method_routes
from exports.destinations import api

app_name = "destinations"

urlpatterns = [
    path("api/v1/bulk-exports/destinations",
         method_routes(get=api.DestinationListApi, post=api.DestinationCreateApi), name="destinations"),
    path("api/v1/bulk-exports/destinations/<uuid:destination_id>",
         method_routes(get=api.DestinationDetailApi, patch=api.DestinationCredentialsUpdateApi,
                       delete=api.DestinationDeleteApi),
         name="destination-detail"),
]

from __future__ import annotations

from django.urls import path

from agentauth import api, views
from core.views import method_routes

app_name = "agentauth"

urlpatterns = [
    path("v2/auth/providers", method_routes(get=api.ProviderListApi, post=api.ProviderCreateApi), name="providers"),
    path("v2/auth/providers/<str:provider_id>",
         method_routes(get=api.ProviderDetailApi, patch=api.ProviderUpdateApi, delete=api.ProviderDeleteApi),
         name="provider-detail"),
    path("v2/auth/authenticate", api.AuthenticateApi.as_view(), name="authenticate"),
    path("v2/auth/wait/<str:auth_id>", api.AuthWaitApi.as_view(), name="wait"),
    path("v2/auth/tokens", method_routes(delete=api.TokensRevokeApi), name="tokens"),
    path("v2/auth/start/<str:auth_id>", views.AuthStartView.as_view(), name="start"),
    path("v2/auth/callback/<str:provider_id>", views.AuthCallbackView.as_view(), name="callback"),
    # The default frontend callback page (OAUTH_FRONTEND_CALLBACK_URL).
    path("auth/done", views.callback_page, name="done"),
]

"""A serving process's Django views: the Agent Server API at the root (what `get_client(url=custom_url)` calls) and
under /api beside the examples' chat routes, which deployments/serving_asgi.py routes ahead of Django."""

from django.http import JsonResponse
from django.urls import include, path

urlpatterns: list = [
    path("", include("agentserver.urls")),
    path("api/", include("agentserver.urls")),
]


def not_found(request, exception=None):
    """Any other path: the Agent Server's 404 body."""
    return JsonResponse({"detail": "Not Found"}, status=404)


handler404 = not_found

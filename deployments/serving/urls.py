"""A serving process's Django views: the Agent Server API at the root (what `get_client(url=custom_url)` calls) and
under /api beside the examples' chat routes, which deployments/serving/asgi.py routes ahead of Django."""

from django.urls import include, path

from core.rest_errors import error_response

urlpatterns: list = [
    path("", include("agentserver.urls")),
    path("api/", include("agentserver.urls")),
]


def not_found(request, exception=None):
    """Any other path: the Agent Server's 404 body."""
    return error_response(404, "Not Found")


handler404 = not_found

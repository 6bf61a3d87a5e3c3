"""Shared views: health, and method routing for paths that hold several operations."""

from __future__ import annotations

from django.contrib.staticfiles import finders
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET


def method_routes(**views):
    """One URL, one DRF view per HTTP method: `method_routes(get=ListApi, post=CreateApi)`."""
    callbacks = {method.upper(): view.as_view() for method, view in views.items()}
    if "GET" in callbacks:
        callbacks.setdefault("HEAD", callbacks["GET"])
    allowed = ", ".join(sorted(callbacks))

    @csrf_exempt
    def dispatch(request, *args, **kwargs):
        callback = callbacks.get(request.method)
        if callback is None:
            return JsonResponse({"detail": "Method Not Allowed"}, status=405, headers={"Allow": allowed})
        return callback(request, *args, **kwargs)

    dispatch.method_callbacks = {m: cb for m, cb in callbacks.items() if m != "HEAD"}
    return dispatch


def healthz(request):
    """200 when the database answers, 503 when it does not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request):
    """/favicon.ico for every page of the site (browsers ask for it even where no page links it)."""
    with open(finders.find("core/favicon.ico"), "rb") as icon:
        return HttpResponse(icon.read(), content_type="image/x-icon")

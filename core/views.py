"""Shared views: health, and method routing for paths that hold several operations."""

from __future__ import annotations

import logging

from django.contrib.staticfiles import finders
from django.db import DatabaseError, connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from drf_spectacular.views import SpectacularSwaggerView

from core.rest_errors import error_response
from core.services import health_probe_write
from core.throttling import cache_circuit_open

log = logging.getLogger("core.health")


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
            return error_response(405, "Method Not Allowed", headers={"Allow": allowed})
        return callback(request, *args, **kwargs)

    dispatch.method_callbacks = {m: cb for m, cb in callbacks.items() if m != "HEAD"}
    return dispatch


def healthz(request):
    """200 when the database answers and accepts a write; 503 with the reason when it does not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    try:
        health_probe_write()
    except DatabaseError as exc:
        reason = _first_line(exc)
        log.error("health check: the database refuses writes: %s", reason)
        return JsonResponse({"status": "unavailable", "database": "not writable", "reason": reason}, status=503)
    # The cache failing only switches rate limiting off (core/throttling.py): said here, still healthy.
    return JsonResponse({"status": "ok", "database": "ok",
                         "cache": "unavailable, rate limiting off" if cache_circuit_open() else "ok"})


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request):
    """/favicon.ico for every page of the site (browsers ask for it even where no page links it)."""
    with open(finders.find("core/favicon.ico"), "rb") as icon:
        return HttpResponse(icon.read(), content_type="image/x-icon")


class ApiReferencePage(SpectacularSwaggerView):
    """Swagger UI, answering GET and HEAD only: OPTIONS would describe the page through its HTML renderer, which
    cannot (a 500), so it is the 405 every other method gets."""

    @property
    def allowed_methods(self) -> list[str]:
        return ["GET", "HEAD"]

    def options(self, request, *args, **kwargs):
        return error_response(405, "Method Not Allowed", headers={"Allow": "GET, HEAD"})

"""The deployment page `langgraph deploy` links to: `View status: {base}/o/{tenant}/host/deployments/{id}`.

On LangSmith that link opens the deployment in the dashboard, after a login if needed. Here the dashboard is the
admin: the link logs the visitor in first and then opens the deployment's admin page. Nothing about a deployment
is looked up for a visitor who is not logged in to the admin, so the link tells strangers nothing.
"""

from __future__ import annotations

import uuid

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from deployments import selectors


@require_GET
@never_cache
def deployment_status_page(request: HttpRequest, tenant_id: uuid.UUID, deployment_id: uuid.UUID) -> HttpResponse:
    """Redirect to the deployment's admin page, or to the admin login that comes back here."""
    if not admin.site.has_permission(request):
        return redirect_to_login(request.get_full_path(), login_url=reverse("admin:login"))
    deployment = selectors.deployment_find(tenant_id=tenant_id, deployment_id=deployment_id)
    if deployment is None:
        raise Http404("No such deployment in this workspace.")
    return redirect("admin:deployments_deployment_change", deployment.pk)

"""Startup checks: a frontend callback URL that could not be redirected to safely stops the service."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from agentauth.frontend import validate_callback_url


@register()
def check_frontend_callback_url(app_configs, **kwargs):
    problem = validate_callback_url(getattr(settings, "OAUTH_FRONTEND_CALLBACK_URL", ""))
    if problem:
        return [Error(f"OAUTH_FRONTEND_CALLBACK_URL {problem}.", id="agentauth.E001",
                      hint="Set it to the page users land on after an OAuth flow, e.g. https://app.example.com/auth/done.")]
    return []

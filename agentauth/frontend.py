"""The frontend callback page: where the browser lands after a flow, and what it is told there.

Redirects only ever go to the one configured OAUTH_FRONTEND_CALLBACK_URL. Nothing a request
carries decides the target: the query holds only a status, our own error code and the auth_id,
each produced here, never copied from the provider's answer.
"""

from __future__ import annotations

import re
import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.http import url_has_allowed_host_and_scheme

# Plain-word messages for every error code the callback and the start page redirect with.
MESSAGES = {
    "access_denied": "You declined the request, so the agent did not get access. You can close this window.",
    "provider_error": "The sign-in service reported a problem and did not grant access. Please try again.",
    "state_missing": "This sign-in link is incomplete. Please start again from the agent.",
    "state_invalid": "This sign-in link is not valid. Please start again from the agent.",
    "state_expired": "This sign-in link has expired (links are valid for 10 minutes). Please start again from the "
                     "agent.",
    "state_used": "This sign-in link has already been used. Please start again from the agent.",
    "browser_mismatch": "This sign-in was finished in a different browser than the one that started it, so it was "
                        "refused. Open the agent's link in this browser and try again.",
    "flow_not_found": "This sign-in link is not valid or has expired. Please start again from the agent.",
    "code_missing": "The sign-in service did not send an authorization code. Please try again.",
    "provider_timeout": "The sign-in service did not answer in time. Please try again in a moment.",
    "exchange_failed": "The sign-in service did not accept the request for access. Please try again.",
    "rate_limited": "Too many sign-in attempts. Please wait a minute and try again.",
    "server_error": "Something went wrong on our side. Please try again.",
}
GENERIC_ERROR = "The sign-in did not complete. Please start again from the agent."
SUCCESS = "You're signed in. The agent can now continue; you can close this window."

# Provider error codes (RFC 6749 §4.1.2.1) passed on as they are; any other becomes provider_error.
PROVIDER_ERRORS = {"access_denied"}
_CODE = re.compile(r"^[a-z_]{1,64}$")


def callback_url() -> str:
    return settings.OAUTH_FRONTEND_CALLBACK_URL


def validate_callback_url(url: str) -> str | None:
    """Why `url` cannot be the frontend callback page, or None when it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an absolute http(s) URL"
    if "@" in parts.netloc:
        return "must not carry user information"
    if parts.fragment:
        return "must not have a #fragment"
    return None


def redirect_url(*, status: str, auth_id: uuid.UUID | None = None, error: str | None = None) -> str:
    """The page URL with only our own status, error code and auth_id in its query."""
    base = callback_url()
    problem = validate_callback_url(base)
    if problem:
        raise ImproperlyConfigured(f"OAUTH_FRONTEND_CALLBACK_URL {problem}.")
    parts = urlsplit(base)
    params = [("status", status)]
    if error:
        params.append(("error", error if error in MESSAGES else "server_error"))
    if auth_id:
        params.append(("auth_id", str(auth_id)))
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *params])
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    # Belt and braces: whatever was configured, the target stays on the configured origin.
    if not url_has_allowed_host_and_scheme(url, allowed_hosts={parts.netloc}, require_https=parts.scheme == "https"):
        raise ImproperlyConfigured("OAUTH_FRONTEND_CALLBACK_URL does not produce a safe redirect.")
    return url


def provider_error_code(raw: str) -> str:
    return raw if raw in PROVIDER_ERRORS else "provider_error"


def page_context(query) -> dict:
    """What the page shows for its query string; anything unknown is dropped, never echoed."""
    status = query.get("status", "")
    raw_error = query.get("error", "")
    error = raw_error if _CODE.match(raw_error or "") else ""
    auth_id = _uuid_or_empty(query.get("auth_id", ""))
    if status == "completed" and not error:
        return {"ok": True, "message": SUCCESS, "auth_id": auth_id, "error": ""}
    return {"ok": False, "message": MESSAGES.get(error, GENERIC_ERROR), "auth_id": auth_id,
            "error": error if error in MESSAGES else ""}


def _uuid_or_empty(raw: str) -> str:
    try:
        return str(uuid.UUID(raw))
    except (ValueError, TypeError, AttributeError):
        return ""

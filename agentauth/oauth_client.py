"""The token endpoint of a tenant's OAuth provider: code exchange and refresh, through the egress guard.

The provider is attacker-controllable (a tenant types its URL), so every call goes through
`core.egress` (checked and pinned address, no redirects followed, bounded time and size), and
nothing the provider answers is ever echoed: failures become one of a few fixed codes.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote

import httpx
from django.conf import settings

from agentauth.models import OAuthProvider
from core.egress import EgressDenied, egress_http_request

log = logging.getLogger("agentauth.oauth")

MAX_TOKEN_LENGTH = 16 * 1024


class TokenEndpointError(Exception):
    """The token endpoint gave no usable tokens. `code` is safe to show; `retryable` says whether to try again."""

    def __init__(self, code: str, *, retryable: bool):
        self.code = code
        self.retryable = retryable
        super().__init__(code)


@dataclass(frozen=True)
class TokenSet:
    access_token: str
    token_type: str
    refresh_token: str
    expires_in: int | None
    scopes: list[str] | None

    def __repr__(self) -> str:  # never let a token reach a log line through repr()
        return f"TokenSet(token_type={self.token_type!r}, expires_in={self.expires_in!r}, scopes={self.scopes!r})"


def exchange_code(*, provider: OAuthProvider, code: str, redirect_uri: str, code_verifier: str) -> TokenSet:
    """Trade an authorization code for tokens (RFC 6749 §4.1.3, RFC 7636 §4.5)."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if code_verifier:
        form["code_verifier"] = code_verifier
    return _token_request(provider, form)


def refresh_tokens(*, provider: OAuthProvider, refresh_token: str) -> TokenSet:
    """Trade a refresh token for a fresh access token (RFC 6749 §6)."""
    return _token_request(provider, {"grant_type": "refresh_token", "refresh_token": refresh_token})


def _token_request(provider: OAuthProvider, form: dict[str, str]) -> TokenSet:
    headers = {"Accept": "application/json"}
    if provider.client_secret:
        headers["Authorization"] = _basic_auth(provider.client_id, provider.client_secret)
    else:
        form = {**form, "client_id": provider.client_id}  # a public client identifies itself in the body
    try:
        response = egress_http_request(
            "POST", provider.token_url, headers=headers, data=form,
            timeout=(settings.OAUTH_TOKEN_CONNECT_TIMEOUT_SECONDS, settings.OAUTH_TOKEN_READ_TIMEOUT_SECONDS),
            require_https=not settings.DEBUG,
        )
    except EgressDenied:
        log.warning("Token request for provider %s refused by the egress guard", provider.provider_id)
        raise TokenEndpointError("endpoint_not_allowed", retryable=False) from None
    except httpx.TimeoutException:
        log.warning("Token request for provider %s timed out", provider.provider_id)
        raise TokenEndpointError("provider_timeout", retryable=True) from None
    except httpx.HTTPError as exc:
        log.warning("Token request for provider %s failed: %s", provider.provider_id, type(exc).__name__)
        raise TokenEndpointError("provider_unreachable", retryable=True) from None
    return _parse_response(provider, response)


def _basic_auth(client_id: str, client_secret: str) -> str:
    # RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined and base64-encoded.
    raw = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


def _parse_response(provider: OAuthProvider, response: httpx.Response) -> TokenSet:
    status = response.status_code
    if status >= 500:
        log.warning("Token endpoint of provider %s answered %s", provider.provider_id, status)
        raise TokenEndpointError("provider_error", retryable=True)
    body = _decode_body(response)
    if status != 200:
        error = body.get("error")
        if not isinstance(error, str):
            error = ""
        # Only the RFC's error code is logged; descriptions may quote secrets back at us.
        log.warning("Token endpoint of provider %s refused the request: %s %s", provider.provider_id, status,
                    error[:64] if error.replace("_", "").isalnum() else "")
        if error == "invalid_grant":
            raise TokenEndpointError("invalid_grant", retryable=False)
        raise TokenEndpointError("token_request_rejected", retryable=False)
    return _token_set(provider, body)


def _decode_body(response: httpx.Response) -> dict:
    content_type = response.headers.get("content-type", "")
    try:
        text = response.content.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    if "json" in content_type or text.lstrip().startswith("{"):
        try:
            decoded = json.loads(text)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    # Some providers (GitHub without Accept) answer form-encoded.
    return dict(parse_qsl(text))


def _token_set(provider: OAuthProvider, body: dict) -> TokenSet:
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token or len(access_token) > MAX_TOKEN_LENGTH:
        log.warning("Token endpoint of provider %s answered without a usable access_token", provider.provider_id)
        raise TokenEndpointError("invalid_token_response", retryable=False)
    refresh_token = body.get("refresh_token")
    if not isinstance(refresh_token, str) or len(refresh_token) > MAX_TOKEN_LENGTH:
        refresh_token = ""
    token_type = body.get("token_type")
    if not isinstance(token_type, str):
        token_type = ""
    scope = body.get("scope")
    return TokenSet(
        access_token=access_token,
        token_type=token_type[:64],
        refresh_token=refresh_token,
        expires_in=_expires_in(body.get("expires_in")),
        # RFC 6749 separates scopes with spaces; GitHub uses commas.
        scopes=[s for s in re.split(r"[\s,]+", scope) if s] if isinstance(scope, str) else None,
    )


def _expires_in(raw) -> int | None:
    # RFC 6749 says a number; several providers send a numeric string.
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None

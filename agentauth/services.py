"""Writes: providers, the authenticate → start → callback flow, token refresh and revocation.

How a flow is protected (RFC 9700 §2.1, §4.7):
- `authenticate` creates the flow; its URL points at our own start page, not at the provider.
- The first browser to open the start page is bound to the flow by an HttpOnly cookie; only a
  SHA-256 of the cookie is stored. That browser gets a fresh single-use `state` (stored hashed)
  and, with PKCE, a fresh verifier (stored encrypted).
- The callback accepts a state only with the cookie of the browser it was issued to, and
  consumes it with one conditional UPDATE: of any number of racing callbacks exactly one
  changes the row, and only that one calls the token endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from accounts.models import Workspace
from agentauth import frontend, oauth_client, selectors
from agentauth.models import AuthFlow, OAuthProvider, OAuthToken
from agentauth.oauth_client import TokenEndpointError, TokenSet
from core.egress import check_url
from core.exceptions import Conflict, RequestValidationError, ServiceError

log = logging.getLogger("agentauth")

FLOW_COOKIE_PREFIX = "agentauth_flow_"
PROVIDER_FIELDS = ("name", "client_id", "client_secret", "auth_url", "token_url", "uses_pkce", "code_challenge_method")


class ProviderUnavailable(ServiceError, status=502,
                          detail="The OAuth provider's token endpoint did not answer. Try again later."): ...


class FlowRefused(Exception):
    """The browser's request cannot go on; `code` is the error shown on the frontend page."""

    def __init__(self, code: str, auth_id: uuid.UUID | None = None):
        self.code = code
        self.auth_id = auth_id
        super().__init__(code)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


# --- providers ---------------------------------------------------------------------------------


def provider_urls_check(data: dict) -> None:
    """auth_url and token_url pass the egress guard; plain http only in DEBUG or when allowlisted."""
    for name in ("auth_url", "token_url"):
        if name in data:
            check_url(data[name], require_https=not settings.DEBUG)


def provider_public_client_check(*, client_secret: str, uses_pkce: bool) -> None:
    """RFC 9700 §2.1.1: a client without a secret (a public client) must use PKCE."""
    if not client_secret and not uses_pkce:
        raise RequestValidationError.single(["body", "uses_pkce"], "A provider without client_secret (a public "
                                            "client) must use PKCE: set uses_pkce to true.")


def provider_create(*, workspace: Workspace, provider_id: str, **fields: Any) -> OAuthProvider:
    """Register a provider; its URLs must pass the egress guard."""
    provider_urls_check(fields)
    provider = OAuthProvider(workspace=workspace, provider_id=provider_id,
                             **{k: v for k, v in fields.items() if k in PROVIDER_FIELDS})
    provider_public_client_check(client_secret=provider.client_secret, uses_pkce=provider.uses_pkce)
    try:
        with transaction.atomic():
            provider.save()
    except IntegrityError:
        raise Conflict(f"OAuth provider {provider_id} already exists.") from None
    log.info("OAuth provider %s created in workspace %s", provider_id, workspace.id)
    return provider


def provider_update(*, provider: OAuthProvider, **fields: Any) -> OAuthProvider:
    """Change the given fields; an omitted client_secret keeps the stored one."""
    changes = {k: v for k, v in fields.items() if k in PROVIDER_FIELDS}
    provider_urls_check(changes)
    for name, value in changes.items():
        setattr(provider, name, value)
    provider_public_client_check(client_secret=provider.client_secret, uses_pkce=provider.uses_pkce)
    provider.save()
    log.info("OAuth provider %s updated (%s)", provider.provider_id, ", ".join(sorted(changes)) or "no fields")
    return provider


def provider_delete(*, provider: OAuthProvider) -> None:
    """Delete a provider with its flows and stored tokens."""
    log.info("OAuth provider %s deleted from workspace %s", provider.provider_id, provider.workspace_id)
    provider.delete()


def callback_uri(provider: OAuthProvider) -> str:
    """The redirect_uri: identical in the authorization request and the token exchange."""
    return f"{settings.PUBLIC_BASE_URL}/v2/auth/callback/{provider.provider_id}"


# --- authenticate --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthenticateResult:
    status: str
    token: str | None = field(default=None, repr=False)
    url: str | None = None
    auth_id: uuid.UUID | None = None


def auth_authenticate(*, workspace: Workspace, user_id: str, provider_id: str, scopes: list[str],
                      agent_id: str | None = None) -> AuthenticateResult:
    """Answer a stored token that covers `scopes` (refreshing it if needed), else start a flow."""
    provider = selectors.provider_get(workspace=workspace, provider_id=provider_id)
    agent_id = agent_id or ""
    token = selectors.token_find(provider=provider, user_id=user_id, agent_id=agent_id)
    if token is not None and token.covers(scopes):
        if not token.is_expired():
            return AuthenticateResult(status="completed", token=token.access_token)
        if token.refresh_token:
            refreshed = token_refresh(token=token)
            if refreshed is not None:
                return AuthenticateResult(status="completed", token=refreshed.access_token)
    flow = AuthFlow.objects.create(
        workspace=workspace, provider=provider, user_id=user_id, agent_id=agent_id, scopes=list(scopes),
        expires_at=timezone.now() + timedelta(seconds=settings.OAUTH_FLOW_TTL_SECONDS),
    )
    log.info("OAuth flow %s started for provider %s", flow.id, provider.provider_id)
    return AuthenticateResult(status="pending", url=f"{settings.PUBLIC_BASE_URL}/v2/auth/start/{flow.id}",
                              auth_id=flow.id)


# --- refresh -------------------------------------------------------------------------------------


def token_refresh(*, token: OAuthToken) -> OAuthToken | None:
    """Refresh an expired token; None when it cannot be (the caller then asks the user again).

    Only one request refreshes a token at a time (providers that rotate refresh tokens would
    reject the second); the others wait for its result. No transaction is held meanwhile.
    """
    now = timezone.now()
    lease = timedelta(seconds=_refresh_lease_seconds())
    claimed = OAuthToken.objects.filter(
        Q(refresh_lease_until__isnull=True) | Q(refresh_lease_until__lt=now), pk=token.pk,
    ).update(refresh_lease_until=now + lease)
    if not claimed:
        return _await_other_refresh(token)
    try:
        tokens = oauth_client.refresh_tokens(provider=token.provider, refresh_token=token.refresh_token)
    except TokenEndpointError as exc:
        return _refresh_failed(token, exc)
    # An UPDATE, not save(): a token revoked meanwhile must stay deleted, not be inserted again.
    updated = OAuthToken.objects.filter(pk=token.pk).update(
        access_token=tokens.access_token,
        refresh_token=tokens.refresh_token or token.refresh_token,
        token_type=tokens.token_type or token.token_type,
        scopes=tokens.scopes if tokens.scopes is not None else token.scopes,
        expires_at=_expires_at(tokens),
        refresh_lease_until=None,
        updated_at=timezone.now(),
    )
    if not updated:
        return None
    log.info("OAuth token %s refreshed", token.id)
    return OAuthToken.objects.get(pk=token.pk)


def _refresh_lease_seconds() -> float:
    return settings.OAUTH_TOKEN_CONNECT_TIMEOUT_SECONDS + settings.OAUTH_TOKEN_READ_TIMEOUT_SECONDS + 5


def _refresh_failed(token: OAuthToken, exc: TokenEndpointError) -> OAuthToken | None:
    if exc.code == "invalid_grant":
        # The refresh token is dead (revoked, expired, rotated): forget it and ask the user again.
        log.info("OAuth token %s could not be refreshed (invalid_grant); deleting it", token.id)
        OAuthToken.objects.filter(pk=token.pk).delete()
        return None
    OAuthToken.objects.filter(pk=token.pk).update(refresh_lease_until=None)
    if exc.retryable:
        raise ProviderUnavailable()
    return None


def _await_other_refresh(token: OAuthToken) -> OAuthToken | None:
    deadline = time.monotonic() + _refresh_lease_seconds()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        current = OAuthToken.objects.filter(pk=token.pk).first()
        if current is None:
            return None
        if current.refresh_lease_until is None or current.refresh_lease_until < timezone.now():
            return None if current.is_expired() else current
    return None


def _expires_at(tokens: TokenSet) -> datetime | None:
    return timezone.now() + timedelta(seconds=tokens.expires_in) if tokens.expires_in is not None else None


# --- the browser: start page -------------------------------------------------------------------


@dataclass(frozen=True)
class FlowStart:
    authorize_url: str = field(repr=False)  # carries the state
    cookie_name: str
    cookie_value: str = field(repr=False)
    max_age: int


def flow_cookie_name(auth_id: uuid.UUID) -> str:
    return f"{FLOW_COOKIE_PREFIX}{auth_id.hex}"


def flow_start(*, auth_id: str, cookies: dict[str, str]) -> FlowStart:
    """Bind the first browser to the flow and send it to the provider with a fresh state.

    The same browser may open the link again (a new state replaces the old one); any other
    browser is refused, so an authorize link cannot be handed to someone else.
    """
    flow = selectors.flow_get(auth_id=auth_id)
    if flow is None or flow.status != AuthFlow.Status.PENDING or flow.state_used_at is not None:
        raise FlowRefused("flow_not_found")
    if flow.is_expired:
        raise FlowRefused("state_expired")
    cookie_name = flow_cookie_name(flow.id)
    presented = cookies.get(cookie_name, "")
    if flow.browser_hash and not constant_time_compare(_digest(presented), flow.browser_hash):
        log.warning("OAuth flow %s opened by a second browser; refused", flow.id)
        raise FlowRefused("browser_mismatch")
    cookie_value = presented if flow.browser_hash else secrets.token_urlsafe(32)
    state = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64) if flow.provider.uses_pkce else ""
    bound = AuthFlow.objects.filter(
        pk=flow.pk, status=AuthFlow.Status.PENDING, state_used_at__isnull=True, browser_hash=flow.browser_hash,
    ).update(browser_hash=_digest(cookie_value), state_hash=_digest(state), code_verifier=verifier,
             started_at=timezone.now())
    if not bound:  # another browser bound it between our read and our write
        raise FlowRefused("browser_mismatch")
    max_age = max(1, int((flow.expires_at - timezone.now()).total_seconds()))
    return FlowStart(authorize_url=_authorize_url(flow, state, verifier), cookie_name=cookie_name,
                     cookie_value=cookie_value, max_age=max_age)


def _authorize_url(flow: AuthFlow, state: str, verifier: str) -> str:
    provider = flow.provider
    params = [("response_type", "code"), ("client_id", provider.client_id), ("redirect_uri", callback_uri(provider)),
              ("state", state)]
    if flow.scopes:
        params.append(("scope", " ".join(flow.scopes)))
    if verifier:
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params += [("code_challenge", challenge), ("code_challenge_method", "S256")]
    parts = urlsplit(provider.auth_url)
    ours = {name for name, _ in params}
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ours]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept + params), ""))


# --- the browser: callback -----------------------------------------------------------------------


def callback_handle(*, provider_id: str, cookies: dict[str, str], state: str | None, code: str | None,
                    error: str | None) -> uuid.UUID:
    """Validate and consume the state, exchange the code, store the tokens; return the auth_id.

    Raises FlowRefused with the error code to show. Nothing is trusted before the state is valid
    for this provider and this browser: until then no flow changes and no token call is made.
    """
    flow = _flow_for_state(provider_id=provider_id, state=state, cookies=cookies)
    now = timezone.now()
    consumed = AuthFlow.objects.filter(
        pk=flow.pk, state_hash=flow.state_hash, status=AuthFlow.Status.PENDING, state_used_at__isnull=True,
        expires_at__gt=now,
    ).update(state_used_at=now, status=AuthFlow.Status.EXCHANGING)
    if consumed != 1:
        raise FlowRefused("state_used")
    if error:
        raise _flow_failed(flow, frontend.provider_error_code(error))
    if not code:
        raise _flow_failed(flow, "code_missing")
    try:
        tokens = oauth_client.exchange_code(provider=flow.provider, code=code, redirect_uri=callback_uri(flow.provider),
                                            code_verifier=flow.code_verifier)
    except TokenEndpointError as exc:
        raise _flow_failed(flow, "provider_timeout" if exc.code == "provider_timeout" else "exchange_failed") from None
    _flow_complete(flow, tokens)
    return flow.id


def _flow_for_state(*, provider_id: str, state: str | None, cookies: dict[str, str]) -> AuthFlow:
    if not state:
        raise FlowRefused("state_missing")
    flow = AuthFlow.objects.select_related("provider").filter(state_hash=_digest(state)).first()
    if flow is None or flow.provider.provider_id != provider_id:
        raise FlowRefused("state_invalid")
    if flow.state_used_at is not None or flow.status != AuthFlow.Status.PENDING:
        raise FlowRefused("state_used")
    if flow.is_expired:
        raise FlowRefused("state_expired")
    presented = cookies.get(flow_cookie_name(flow.id), "")
    if not presented or not constant_time_compare(_digest(presented), flow.browser_hash):
        log.warning("OAuth callback for flow %s came from a browser that did not start it; refused", flow.id)
        raise FlowRefused("browser_mismatch")
    return flow


def _flow_failed(flow: AuthFlow, code: str) -> FlowRefused:
    """Mark a consumed flow failed; return the error to raise."""
    AuthFlow.objects.filter(pk=flow.pk).update(status=AuthFlow.Status.FAILED, error=code, code_verifier="",
                                               completed_at=timezone.now())
    log.info("OAuth flow %s failed: %s", flow.id, code)
    return FlowRefused(code, auth_id=flow.id)


@transaction.atomic
def _flow_complete(flow: AuthFlow, tokens: TokenSet) -> None:
    existing = OAuthToken.objects.select_for_update().filter(
        provider=flow.provider, user_id=flow.user_id, agent_id=flow.agent_id).first()
    token = existing or OAuthToken(workspace=flow.workspace, provider=flow.provider, user_id=flow.user_id,
                                   agent_id=flow.agent_id)
    token.access_token = tokens.access_token
    # Some providers send a refresh token only on the first consent: keep the one we have.
    token.refresh_token = tokens.refresh_token or (existing.refresh_token if existing else "")
    token.token_type = tokens.token_type
    token.scopes = tokens.scopes if tokens.scopes is not None else list(flow.scopes)
    token.expires_at = _expires_at(tokens)
    token.refresh_lease_until = None
    token.save()
    AuthFlow.objects.filter(pk=flow.pk).update(status=AuthFlow.Status.COMPLETED, token=token, code_verifier="",
                                               completed_at=timezone.now())
    log.info("OAuth flow %s completed; token %s stored", flow.id, token.id)


# --- revocation and housekeeping ---------------------------------------------------------------


def tokens_revoke(*, workspace: Workspace, user_id: str, provider_id: str) -> int:
    """Delete the user's stored tokens for the provider, across agents; return how many."""
    provider = selectors.provider_get(workspace=workspace, provider_id=provider_id)
    _, per_model = OAuthToken.objects.filter(provider=provider, user_id=user_id).delete()
    deleted = per_model.get(OAuthToken._meta.label, 0)
    log.info("Revoked %s OAuth token(s) of provider %s", deleted, provider_id)
    return deleted


def flows_purge(*, older_than: timedelta = timedelta(days=1)) -> int:
    """Delete flows that ended (or expired) more than `older_than` ago."""
    deleted, _ = AuthFlow.objects.filter(expires_at__lt=timezone.now() - older_than).delete()
    return deleted

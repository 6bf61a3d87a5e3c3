"""Reads: providers, tokens and the state of a flow (including the long poll behind `wait`)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from django.db import connection
from django.db.models import QuerySet

from accounts.models import Workspace
from agentauth.models import AuthFlow, OAuthProvider, OAuthToken
from core.exceptions import NotFound

# The long poll re-reads the flow with growing pauses: quick answers for a fast consent, few
# queries for a slow one. No transaction is held between reads.
_POLL_FIRST_SECONDS = 0.2
_POLL_MAX_SECONDS = 1.0
# A longer wait waits this long: the request holds a worker meanwhile.
WAIT_MAX_SECONDS = 300


def provider_list(*, workspace: Workspace) -> QuerySet[OAuthProvider]:
    return OAuthProvider.objects.filter(workspace=workspace).order_by("provider_id")


def provider_get(*, workspace: Workspace, provider_id: str) -> OAuthProvider:
    """The workspace's provider; another workspace's answers 404 exactly like a missing one."""
    provider = OAuthProvider.objects.filter(workspace=workspace, provider_id=provider_id).first()
    if provider is None:
        raise NotFound(f"OAuth provider {provider_id} not found.")
    return provider


def token_find(*, provider: OAuthProvider, user_id: str, agent_id: str) -> OAuthToken | None:
    return OAuthToken.objects.filter(provider=provider, user_id=user_id, agent_id=agent_id).first()


def flow_get(*, auth_id: str) -> AuthFlow | None:
    """A flow by its auth_id, in any workspace (for the browser's start URL), or None."""
    parsed = parse_auth_id(auth_id)
    if parsed is None:
        return None
    return AuthFlow.objects.select_related("provider").filter(pk=parsed).first()


def parse_auth_id(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


@dataclass(frozen=True)
class WaitResult:
    status: str
    token: str | None = None


def flow_check(*, workspace: Workspace, auth_id: str) -> WaitResult:
    """Where a flow stands right now, as `wait` reports it.

    A failed or expired flow will never complete, so it is `not_found` like an unknown one:
    the agent should call authenticate again. A completed flow whose token was since revoked
    is `not_found` too.
    """
    parsed = parse_auth_id(auth_id)
    flow = AuthFlow.objects.filter(pk=parsed, workspace=workspace).select_related("token").first() if parsed else None
    if flow is None or flow.status == AuthFlow.Status.FAILED:
        return WaitResult("not_found")
    if flow.status == AuthFlow.Status.COMPLETED:
        return WaitResult("completed", flow.token.access_token) if flow.token else WaitResult("not_found")
    if flow.is_expired:
        return WaitResult("not_found")
    return WaitResult("pending")


def flow_wait(*, workspace: Workspace, auth_id: str, timeout: float) -> WaitResult:
    """Poll until the flow leaves `pending`; after `timeout` seconds (at most WAIT_MAX_SECONDS) answer `timeout`
    (0 answers at once)."""
    deadline = time.monotonic() + min(timeout, WAIT_MAX_SECONDS)
    pause = _POLL_FIRST_SECONDS
    while True:
        result = flow_check(workspace=workspace, auth_id=auth_id)
        remaining = deadline - time.monotonic()
        if result.status != "pending":
            return result
        if timeout <= 0:
            return result
        if remaining <= 0:
            return WaitResult("timeout")
        _release_connection()
        time.sleep(min(pause, remaining))
        pause = min(pause * 1.5, _POLL_MAX_SECONDS)


def _release_connection() -> None:
    # A long poll must not pin one of the database's connections while it sleeps; the next read reconnects.
    # Inside a transaction (tests wrap theirs in one) closing would end it, so the connection stays.
    if not connection.in_atomic_block:
        connection.close()

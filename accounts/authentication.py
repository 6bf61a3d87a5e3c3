"""One DRF authentication class for every REST API: `X-Api-Key` plus `X-Tenant-Id`."""

from __future__ import annotations

import uuid
from functools import cached_property

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.exceptions import PermissionDenied as DrfPermissionDenied

from accounts.models import ApiKey, Workspace
from accounts.permissions import effective_permissions
from accounts.selectors import api_key_authenticate
from core.exceptions import RequestValidationError
from core.throttling import workspace_ident

# LangChain's CLI looks for this phrase to ask the user for a workspace.
AMBIGUOUS_WORKSPACE = "This API key requires workspace specification: send the X-Tenant-Id header."


class ApiKeyPrincipal:
    """The caller behind a valid API key, with the workspace it acts in."""

    is_api_key = True
    is_authenticated = True
    is_anonymous = False

    def __init__(self, api_key: ApiKey, tenant_id: uuid.UUID | None):
        self.api_key = api_key
        self.permissions = effective_permissions(api_key.permissions)
        self._workspaces = list(api_key.workspaces.all())
        self._tenant_id = tenant_id
        if tenant_id is not None:
            self.workspace  # noqa: B018 - a named tenant is checked at once

    @cached_property
    def workspace(self) -> Workspace:
        if self._tenant_id is not None:
            for workspace in self._workspaces:
                if workspace.id == self._tenant_id:
                    return workspace
            raise DrfPermissionDenied("This API key may not use the workspace named in X-Tenant-Id.")
        home = self._home()
        if home is None:
            raise DrfPermissionDenied(AMBIGUOUS_WORKSPACE)
        return home

    def _home(self) -> Workspace | None:
        """Where a call without X-Tenant-Id goes: the key's only workspace, or the one it was created with."""
        if len(self._workspaces) == 1:
            return self._workspaces[0]
        return next((w for w in self._workspaces if w.id == self.api_key.home_workspace_id), None)

    @property
    def throttle_ident(self) -> str:
        if self._tenant_id is not None or self._home() is not None:
            return workspace_ident(self.workspace.id)
        return f"key:{self.api_key.id}"

    def has_permission(self, permission: str) -> bool:
        return permission in self.permissions


def parse_tenant_header(raw: str | None) -> uuid.UUID | None:
    if not raw:
        return None
    try:
        return uuid.UUID(raw.strip())
    except ValueError:
        raise RequestValidationError.single(["header", "x-tenant-id"], "Input should be a valid UUID",
                                            "uuid_parsing") from None


def principal_from_headers(api_key_header: str | None, tenant_header: str | None) -> ApiKeyPrincipal | None:
    """Resolve the caller from raw header values; None when no key was sent.

    Shared with the routes that do not go through DRF (chat streams, the deployment proxy).
    """
    if not api_key_header:
        return None
    api_key = api_key_authenticate(raw_key=api_key_header.strip())
    if api_key is None:
        raise AuthenticationFailed("Invalid API key: it is unknown, revoked or expired.")
    return ApiKeyPrincipal(api_key, parse_tenant_header(tenant_header))


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        # Django folds header names to META keys, so X-API-Key and x-api-key are the same.
        principal = principal_from_headers(request.META.get("HTTP_X_API_KEY"), request.META.get("HTTP_X_TENANT_ID"))
        if principal is None:
            return None
        return principal, principal.api_key

    def authenticate_header(self, request) -> str:
        return "ApiKey"

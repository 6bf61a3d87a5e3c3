"""API-key permissions and the DRF permission class that checks them."""

from __future__ import annotations

from rest_framework.exceptions import NotAuthenticated
from rest_framework.exceptions import PermissionDenied as DrfPermissionDenied
from rest_framework.permissions import BasePermission

ALL_PERMISSIONS = [
    "deployments:read",
    "deployments:manage",
    "bulk-exports:read",
    "bulk-exports:manage",
    "tracing:read",
    "tracing:write",
    "auth:manage",
    "chat:use",
    "workspaces:manage",
]


def effective_permissions(granted: list[str]) -> frozenset[str]:
    """`workspaces:manage` grants everything; each `x:manage` grants `x:read`."""
    if "workspaces:manage" in granted:
        return frozenset(ALL_PERMISSIONS)
    implied = {p.replace(":manage", ":read") for p in granted if p.endswith(":manage")}
    return frozenset(granted) | implied


class HasApiKeyPermission(BasePermission):
    """Needs an authenticated key that carries the view's `required_permission`.

    `required_permission` is a string, a dict from HTTP method to string, or None when any
    valid key will do.
    """

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not getattr(principal, "is_api_key", False):
            raise NotAuthenticated("Missing API key: send it in the X-Api-Key header.")
        required = getattr(view, "required_permission", None)
        if isinstance(required, dict):
            required = required.get(request.method)
        if required and not principal.has_permission(required):
            raise DrfPermissionDenied(f"This API key lacks the '{required}' permission.")
        return True

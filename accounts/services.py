"""Writes for workspaces, API keys and the demo/admin bootstrap."""

from __future__ import annotations

import secrets
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import selectors
from accounts.keys import KEY_PREFIX, hash_key
from accounts.models import ApiKey, Workspace
from accounts.permissions import ALL_PERMISSIONS
from core.exceptions import BadRequest, Conflict


@transaction.atomic
def workspace_create(*, name: str, api_key: ApiKey | None = None) -> Workspace:
    """Create a workspace; `api_key`, the key that asked for it, may use it."""
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(name=name)
    except IntegrityError:
        raise Conflict(f"A workspace named {name!r} already exists.") from None
    if api_key is not None:
        api_key.workspaces.add(workspace)
    return workspace


def workspace_get_or_create(*, name: str) -> Workspace:
    workspace, _ = Workspace.objects.get_or_create(name=name)
    return workspace


@transaction.atomic
def api_key_create(*, workspaces: list[Workspace], permissions: list[str] | None = None, name: str = "",
                   expires_at: datetime | None = None) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret, which is never available again."""
    permissions = list(ALL_PERMISSIONS) if permissions is None else list(dict.fromkeys(permissions))
    unknown = [p for p in permissions if p not in ALL_PERMISSIONS]
    if unknown:
        raise BadRequest(f"Unknown permission(s): {', '.join(unknown)}. Known: {', '.join(ALL_PERMISSIONS)}.")
    if not workspaces:
        raise BadRequest("An API key needs at least one workspace.")
    prefix = secrets.token_hex(6)
    raw_key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        name=name, prefix=prefix, hashed_key=hash_key(raw_key), permissions=permissions, expires_at=expires_at,
        home_workspace=workspaces[0] if len(workspaces) == 1 else None,
    )
    api_key.workspaces.set(workspaces)
    return api_key, raw_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at", "updated_at"])
    return api_key


def demo_credentials_ensure() -> tuple[Workspace, str]:
    """Make sure the demo workspace has a working key, kept in DATA_DIR so it survives restarts."""
    workspace = workspace_get_or_create(name=settings.DEMO_WORKSPACE)
    key_file = settings.DATA_DIR / "demo_api_key"
    if key_file.exists():
        raw_key = key_file.read_text().strip()
        api_key = selectors.api_key_authenticate(raw_key=raw_key)
        if api_key and api_key.workspaces.filter(id=workspace.id).exists():
            return workspace, raw_key
    _, raw_key = api_key_create(workspaces=[workspace], name="demo")
    key_file.write_text(raw_key + "\n")
    key_file.chmod(0o600)
    return workspace, raw_key


def admin_user_ensure() -> tuple[str, str | None]:
    """Create the admin user if missing; return the generated password when one was made."""
    user_model = get_user_model()
    username = settings.ADMIN_USERNAME
    user = user_model.objects.filter(username=username).first()
    if user and not settings.ADMIN_PASSWORD:
        return username, None
    password = settings.ADMIN_PASSWORD or secrets.token_urlsafe(12)
    if user is None:
        user_model.objects.create_superuser(username=username, email="", password=password)
    else:
        user.set_password(password)
        user.save(update_fields=["password"])
    return username, None if settings.ADMIN_PASSWORD else password

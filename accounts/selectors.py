"""Reads for API keys and workspaces."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.utils.crypto import constant_time_compare

from accounts.keys import KEY_PREFIX, hash_key
from accounts.models import ApiKey, Workspace
from core.exceptions import NotFound

_DUMMY_HASH = "0" * 128


def api_key_authenticate(*, raw_key: str) -> ApiKey | None:
    """Return the usable key that `raw_key` is, or None (unknown, revoked or expired)."""
    parts = raw_key.split("_", 2)
    prefix = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
    # `prefix` is unique: a plain LIMIT 1, without the ORDER BY (and its query clone) that first() adds.
    api_key = next(iter(ApiKey.objects.filter(prefix=prefix)[:1]), None) if prefix else None
    # Compare even when nothing was found, so timing does not tell which prefixes exist.
    matches = constant_time_compare(hash_key(raw_key), api_key.hashed_key if api_key else _DUMMY_HASH)
    if api_key is None or not matches or not api_key.is_usable:
        return None
    return api_key


def workspace_list_for_key(*, api_key: ApiKey) -> QuerySet[Workspace]:
    return api_key.workspaces.order_by("name")


def workspace_get_for_key(*, api_key: ApiKey, workspace_id: uuid.UUID) -> Workspace:
    workspace = api_key.workspaces.filter(id=workspace_id).first()
    if workspace is None:
        raise NotFound(f"Workspace {workspace_id} not found.")
    return workspace

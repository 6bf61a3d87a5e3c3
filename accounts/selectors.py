"""Reads for API keys and workspaces."""

from __future__ import annotations

import uuid
import weakref
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, QuerySet
from django.utils.crypto import constant_time_compare

from accounts.keys import KEY_PREFIX, hash_key
from accounts.models import ApiKey, Workspace
from core.exceptions import NotFound

_DUMMY_HASH = "0" * 128


def api_key_authenticate(*, raw_key: str) -> ApiKey | None:
    """Return the usable key that `raw_key` is, or None (unknown, revoked or expired)."""
    parts = raw_key.split("_", 2)
    prefix = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
    api_key = _api_key_with_workspaces(prefix) if prefix else None
    # Compare even when nothing was found, so timing does not tell which prefixes exist.
    matches = constant_time_compare(hash_key(raw_key), api_key.hashed_key if api_key else _DUMMY_HASH)
    if api_key is None or not matches or not api_key.is_usable:
        return None
    return api_key


def _api_key_with_workspaces(prefix: str) -> ApiKey | None:
    """The key with this prefix, its workspaces already loaded (`api_key.workspaces.all()` runs no query).

    Every API request authenticates, so this is one query whose SQL is built once per database connection:
    the key left-joined to its workspaces, a row per workspace (one row with empty workspace columns for a
    key without any). As two ORM queries (the key, then its workspaces) it cost about 0.35 ms, mostly in
    building and compiling them.
    """
    db = connections[router.db_for_read(ApiKey)]
    lookup = _lookups.get(db)
    if lookup is None:
        lookup = _lookups[db] = _KeyLookup(db)
    with db.cursor() as cursor:
        cursor.execute(lookup.sql, [prefix])
        rows = cursor.fetchall()
    if not rows:
        return None
    api_key = ApiKey.from_db(db.alias, lookup.key.names, lookup.key.convert(rows[0]))
    workspaces = [Workspace.from_db(db.alias, lookup.workspace.names, lookup.workspace.convert(row))
                  for row in rows if row[lookup.workspace.start] is not None]
    # What prefetch_related("workspaces") leaves on the key: the related manager's queryset, already evaluated.
    cached: Any = api_key.workspaces.all()
    cached._result_cache, cached._prefetch_done = workspaces, True
    api_key._prefetched_objects_cache = {"workspaces": cached}  # type: ignore[attr-defined]
    return api_key


class _Columns:
    """One model's columns in the lookup's rows: where they start, and how the ORM would convert them."""

    def __init__(self, model: type[Model], alias: str, start: int, db: BaseDatabaseWrapper):
        self.fields = list(model._meta.concrete_fields)
        self.names = [field.attname for field in self.fields]
        self.start, self.stop = start, start + len(self.fields)
        self.db = db
        quote = db.ops.quote_name
        self.sql = [f"{alias}.{quote(_column(field))}" for field in self.fields]
        # What the ORM applies to what it reads: UUIDs, datetimes and JSON on SQLite, JSON on PostgreSQL.
        columns = [field.get_col(alias) for field in self.fields]
        self.converters = [(column, db.ops.get_db_converters(column) + field.get_db_converters(db))
                           for field, column in zip(self.fields, columns, strict=True)]

    def convert(self, row: tuple) -> list:
        values = []
        for value, (column, converters) in zip(row[self.start:self.stop], self.converters, strict=True):
            for converter in converters:
                value = converter(value, column, self.db)
            values.append(value)
        return values


class _KeyLookup:
    def __init__(self, db: BaseDatabaseWrapper):
        quote = db.ops.quote_name
        key, workspace, link = ApiKey._meta, Workspace._meta, ApiKey.workspaces.through._meta
        self.key = _Columns(ApiKey, "k", 0, db)
        self.workspace = _Columns(Workspace, "w", self.key.stop, db)
        key_id, prefix, workspace_id, name, link_key, link_workspace = (
            quote(_column(meta.get_field(field))) for meta, field in (
                (key, "id"), (key, "prefix"), (workspace, "id"), (workspace, "name"), (link, "apikey"),
                (link, "workspace")))
        self.sql = (
            f"SELECT {', '.join([*self.key.sql, *self.workspace.sql])} FROM {quote(key.db_table)} k "
            f"LEFT JOIN {quote(link.db_table)} l ON l.{link_key} = k.{key_id} "
            f"LEFT JOIN {quote(workspace.db_table)} w ON w.{workspace_id} = l.{link_workspace} "
            f"WHERE k.{prefix} = %s ORDER BY w.{name}")  # Workspace's own ordering


def _column(field: object) -> str:
    assert isinstance(field, Field) and field.column, field  # a concrete field: it has a column
    return field.column


# Per database connection (each thread has its own): the converters are the connection's.
_lookups: weakref.WeakKeyDictionary[BaseDatabaseWrapper, _KeyLookup] = weakref.WeakKeyDictionary()


def workspace_list_for_key(*, api_key: ApiKey) -> QuerySet[Workspace]:
    return api_key.workspaces.order_by("name")


def workspace_get_for_key(*, api_key: ApiKey, workspace_id: uuid.UUID) -> Workspace:
    workspace = api_key.workspaces.filter(id=workspace_id).first()
    if workspace is None:
        raise NotFound(f"Workspace {workspace_id} not found.")
    return workspace

"""The store's hot paths in SQL of our own (agentruntime/store/django_store.py): a search's page, a batch's gets and
its puts (one upsert), on both databases.

They are what graphs call most, one small query each; through the ORM, building the query and the model instances
cost more than the query itself (bench/store.py). The SQL is the one Django writes for the same lookups, the filter's
narrowing included (agentruntime/store/search_filters.py's `narrowed`), so both paths keep the same rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connections

from agentruntime.store.search_filters import narrowable_conditions
from core.deadlines import minutes_after

COLUMNS = "id, namespace, key, value, created_at, updated_at, ttl_minutes"
# Items per INSERT: 8 parameters each stay far below SQLite's limit of 32,766.
UPSERT_BATCH = 500


class Row(NamedTuple):
    """A StoreItem's columns, as StoreItem's attributes are named."""

    pk: int
    namespace: str
    key: str
    value: dict
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None


def _live(scope: str, now: datetime) -> tuple[str, list[Any]]:
    return "scope = %s AND (expires_at IS NULL OR expires_at > %s)", [scope, now]


def _in_prefix(prefix: str) -> tuple[str, list[Any]]:
    # Compared exactly, not with LIKE (which ignores case on SQLite): the namespace or one under it.
    if not prefix:
        return "", []
    head = f"{prefix}."
    return " AND (namespace = %s OR SUBSTR(namespace, 1, %s) = %s)", [prefix, len(head), head]


def _narrowing(vendor: str, filter: dict[str, Any] | None) -> tuple[str, list[Any]]:
    sql, params = "", []
    for key, operand in narrowable_conditions(filter or {}):
        kept = [operand] + ([bool(operand)] if not isinstance(operand, str) and operand in (0, 1) else [])
        if vendor == "postgresql":
            alternatives = " OR ".join(["(value -> %s) = %s::jsonb"] * len(kept))
            values = [p for v in kept for p in (key, json.dumps(v))]
        else:
            alternatives = " OR ".join(["JSON_EXTRACT(value, %s) = JSON_EXTRACT(%s, '$')"] * len(kept))
            values = [p for v in kept for p in (f'$."{key}"', json.dumps(v))]
        sql += f" AND ({alternatives})"
        params += values
    return sql, params


def select_page(*, using: str, scope: str, now: datetime, prefix: str, filter: dict[str, Any] | None,
                start: int, size: int) -> list[Row]:
    """Rows `start` to `start + size` of the live items under `prefix` that the filter's narrowing keeps, most
    recently updated first."""
    connection = connections[using]
    where, params = _live(scope, now)
    prefix_sql, prefix_params = _in_prefix(prefix)
    narrow_sql, narrow_params = _narrowing(connection.vendor, filter)
    sql = (f"SELECT {COLUMNS} FROM chat_storeitem WHERE {where}{prefix_sql}{narrow_sql} "
           "ORDER BY updated_at DESC, id DESC LIMIT %s OFFSET %s")
    return _rows(using, sql, [*params, *prefix_params, *narrow_params, size, start])


def select_addresses(*, using: str, scope: str, now: datetime, keys_by_namespace: dict[str, set[str]]) -> list[Row]:
    """The live items at these (namespace, key) addresses."""
    where, params = _live(scope, now)
    alternatives = []
    for namespace, keys in keys_by_namespace.items():
        alternatives.append(f"(namespace = %s AND key IN ({', '.join(['%s'] * len(keys))}))")
        params += [namespace, *sorted(keys)]
    sql = f"SELECT {COLUMNS} FROM chat_storeitem WHERE {where} AND ({' OR '.join(alternatives)})"
    return _rows(using, sql, params)


def _rows(using: str, sql: str, params: list[Any]) -> list[Row]:
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return [Row(pk, namespace, key, json.loads(value), _aware(created), _aware(updated), ttl)
                for pk, namespace, key, value, created, updated, ttl in cursor.fetchall()]


def _aware(moment: datetime) -> datetime:
    # SQLite hands back the naive UTC time Django stored; PostgreSQL an aware one.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def upsert(*, using: str, scope: str, now: datetime,
           items: list[tuple[str, str, dict, float | None]]) -> dict[tuple[str, str], int]:
    """Insert or update (namespace, key, value, ttl_minutes) items, UPSERT_BATCH per statement; their ids by address.

    An existing item keeps its created_at: the value, updated_at and expiry change, as in PostgresStore."""
    ids: dict[tuple[str, str], int] = {}
    for start in range(0, len(items), UPSERT_BATCH):
        ids.update(_upsert(using, scope, now, items[start: start + UPSERT_BATCH]))
    return ids


def _upsert(using: str, scope: str, now: datetime,
            items: list[tuple[str, str, dict, float | None]]) -> dict[tuple[str, str], int]:
    connection = connections[using]
    adapt = connection.ops.adapt_datetimefield_value  # as the ORM writes a datetime (naive UTC text on SQLite)
    value_sql = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    placeholders, params = [], []
    for namespace, key, value, ttl in items:
        placeholders.append(f"(%s, %s, %s, {value_sql}, %s, %s, %s, %s)")
        expires = adapt(minutes_after(now, ttl)) if ttl is not None else None
        params += [scope, namespace, key, json.dumps(value), adapt(now), adapt(now), expires, ttl]
    sql = ("INSERT INTO chat_storeitem (scope, namespace, key, value, created_at, updated_at, expires_at, ttl_minutes) "
           f"VALUES {', '.join(placeholders)} ON CONFLICT (scope, namespace, key) DO UPDATE SET "
           "value = excluded.value, updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
           "ttl_minutes = excluded.ttl_minutes RETURNING id, namespace, key")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {(namespace, key): pk for pk, namespace, key in cursor.fetchall()}

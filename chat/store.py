"""The LangGraph store of the chat and of the Agent Server API: items in our own database, through Django.

`DjangoStore` is a `langgraph.store.base.BaseStore` on the StoreItem table (chat/models.py), so the same code runs on
SQLite and PostgreSQL and every server process sees the same items. It behaves as LangGraph's `InMemoryStore` and
`PostgresStore` do (tests/chat/test_store_contract.py runs their contract against all three):

- a batch answers its reads (get, search, list_namespaces) first and applies its writes after them, the last write of
  an item winning; a put keeps the item's `created_at` and moves `updated_at`;
- search lists a namespace prefix's items most recently updated first; a filter matches key by key, a plain value
  (or `$eq`, `$ne`) by JSON equality, `$gt`, `$gte`, `$lt`, `$lte` numerically, or as strings when both
  sides are strings (anything else does not match, where InMemoryStore raises);
- list_namespaces sorts the namespaces that hold items (as PostgresStore; InMemoryStore keeps listing an emptied
  one), after prefix and suffix conditions (`"*"` matches any label) and `max_depth`;
- a namespace and key over MAX_ADDRESS_BYTES together are refused (AddressTooLong) on both databases, where
  PostgreSQL alone would fail to index them.

A run's graph gets its thread owner's store (chat/run_execution.py), as the `store` argument, `get_store()` and
`runtime.store`; the Agent Server API's /store routes use the caller's (agentserver/api_store.py).
Semantic search (`index`) and TTLs are not supported yet: `query` is ignored, as by a store without an index.
Each store has a `scope` and sees only its items. Sync methods use the calling thread's connection (and transaction),
except on an event loop's thread, where Django allows no query; async ones run the same code on the chat's database
threads (chat/db_executor.py).
"""

from __future__ import annotations

import asyncio
import operator
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from chat import db_executor
from chat.models import StoreItem

NUMERIC_OPERATORS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
OPERATORS = {"$eq", "$ne", *NUMERIC_OPERATORS}
SCAN_CHUNK = 500
# A namespace and key are indexed together (with the scope), and PostgreSQL refuses an index row over 2704 bytes.
MAX_ADDRESS_BYTES = 2048


class AddressTooLong(ValueError):
    """An item's namespace and key are too long to index, on either database."""


def namespace_text(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def namespace_tuple(text: str) -> tuple[str, ...]:
    return tuple(text.split(".")) if text else ()


class DjangoStore(BaseStore):
    """A LangGraph store on Django's database (SQLite and PostgreSQL), holding the items of one scope.

    Args:
        scope: Which store this is: items of other scopes are invisible to it.
        using: The Django database alias.
    """

    supports_ttl = False

    def __init__(self, *, scope: str, using: str = "default"):
        self.scope = scope
        self.using = using

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute get, search, list_namespaces and put operations, in one transaction.

        Called on an event loop's thread (a sync call in an async node), it runs on a chat database thread and
        blocks the loop meanwhile, as InMemoryStore's and PostgresStore's sync methods do there.

        Args:
            ops: The operations.

        Returns:
            One result per operation, in order: an Item or None, a list of SearchItems, a list of namespaces, None.
        """
        if _on_event_loop():
            return db_executor.run_blocking(self._batch, list(ops))
        return self._batch(ops)

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with transaction.atomic(using=self.using):
            gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
            for i, item in zip([i for i, _ in gets], self._get_many([op for _, op in gets]), strict=True):
                results[i] = item
            for i, op in enumerate(ops):
                if isinstance(op, SearchOp):
                    results[i] = self._search(op)
                elif isinstance(op, ListNamespacesOp):
                    results[i] = self._list_namespaces(op)
                elif isinstance(op, PutOp):
                    puts[(op.namespace, op.key)] = op
                elif not isinstance(op, GetOp):
                    raise ValueError(f"Unknown operation type: {type(op)}")
            self._apply_puts(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` on a chat database thread."""
        return await db_executor.run(self._batch, list(ops))

    # --- reads -------------------------------------------------------------------------------------

    def _items(self) -> QuerySet[StoreItem]:
        return StoreItem.objects.using(self.using).filter(scope=self.scope)

    def _get_many(self, ops: list[GetOp]) -> list[Item | None]:
        if not ops:
            return []
        keys_by_namespace: dict[str, set[str]] = defaultdict(set)
        for op in ops:
            keys_by_namespace[namespace_text(op.namespace)].add(op.key)
        condition = Q()
        for namespace, keys in keys_by_namespace.items():
            condition |= Q(namespace=namespace, key__in=keys)
        found = {(row.namespace, row.key): row for row in self._items().filter(condition)}
        rows = [found.get((namespace_text(op.namespace), op.key)) for op in ops]
        return [_item(row) if row is not None else None for row in rows]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        rows = self._items().order_by("-updated_at", "-id")
        if op.namespace_prefix:
            prefix = namespace_text(op.namespace_prefix)
            rows = rows.filter(Q(namespace=prefix) | Q(namespace__startswith=f"{prefix}."))
        if not op.filter:
            return [_search_item(row) for row in rows[op.offset: op.offset + op.limit]]
        _check_filter(op.filter)
        matching = (row for row in _scan(_narrowed(rows, op.filter)) if matches(row.value, op.filter))
        found: list[SearchItem] = []
        for index, row in enumerate(matching):
            if index >= op.offset + op.limit:
                break
            if index >= op.offset:
                found.append(_search_item(row))
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        rows = self._items()
        for condition in op.match_conditions or ():
            literal = _leading_literal(condition)
            if literal:
                text = namespace_text(literal)
                rows = rows.filter(Q(namespace=text) | Q(namespace__startswith=f"{text}."))
        namespaces = [namespace_tuple(text) for text in rows.values_list("namespace", flat=True).distinct()]
        namespaces = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]

    # --- writes ------------------------------------------------------------------------------------

    def _apply_puts(self, ops: list[PutOp]) -> None:
        for op in ops:
            if op.value is not None and len(namespace_text(op.namespace).encode()) + len(op.key.encode()) > \
                    MAX_ADDRESS_BYTES:
                raise AddressTooLong(f"The namespace and key together must be at most {MAX_ADDRESS_BYTES} bytes "
                                     "(UTF-8).")
        deletes: dict[str, list[str]] = defaultdict(list)
        for op in ops:
            if op.value is None:
                deletes[namespace_text(op.namespace)].append(op.key)
        for namespace, keys in deletes.items():
            self._items().filter(namespace=namespace, key__in=keys).delete()
        now = timezone.now()
        rows = [StoreItem(scope=self.scope, namespace=namespace_text(op.namespace), key=op.key, value=dict(op.value),
                          created_at=now, updated_at=now) for op in ops if op.value is not None]
        if rows:
            # An existing item keeps its created_at: only the value and updated_at change, as in PostgresStore.
            StoreItem.objects.using(self.using).bulk_create(
                rows, update_conflicts=True, unique_fields=["scope", "namespace", "key"],
                update_fields=["value", "updated_at"])


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _item(row: StoreItem) -> Item:
    return Item(value=row.value, key=row.key, namespace=namespace_tuple(row.namespace),
                created_at=row.created_at, updated_at=row.updated_at)


def _search_item(row: StoreItem) -> SearchItem:
    return SearchItem(namespace=namespace_tuple(row.namespace), key=row.key, value=row.value,
                      created_at=row.created_at, updated_at=row.updated_at)


def _scan(rows: QuerySet[StoreItem]) -> Iterator[StoreItem]:
    # A filter is applied here, in Python, so that it means the same on both databases; chunks keep memory bounded.
    return rows.iterator(chunk_size=SCAN_CHUNK)


def _narrowed(rows: QuerySet[StoreItem], filter: dict[str, Any]) -> QuerySet[StoreItem]:
    # A string that a key must equal narrows the rows in the database (JSON string equality is the same there and in
    # Python, on both databases); `matches` still checks every row, so the database only drops what it would drop.
    for index, (key, condition) in enumerate(filter.items()):
        operand = condition.get("$eq") if isinstance(condition, dict) and set(condition) == {"$eq"} else condition
        if isinstance(operand, str) and _plain_key(key):
            # Through an alias, so that a key is one JSON key whatever it holds (`__`, a lookup's name, a period).
            rows = rows.alias(**{f"filtered_{index}": KeyTransform(key, "value")}).filter(
                **{f"filtered_{index}": operand})
    return rows


def _plain_key(key: str) -> bool:
    # SQLite's JSON paths cannot quote `"` and take JSON's escapes (`\\`, `\u00e9`) literally: such keys stay in Python.
    return bool(key) and key.isascii() and key.isprintable() and '"' not in key and "\\" not in key


def _check_filter(filter: dict[str, Any]) -> None:
    for condition in filter.values():
        if isinstance(condition, dict) and any(key.startswith("$") for key in condition):
            unknown = [key for key in condition if key not in OPERATORS]
            if unknown:
                raise ValueError(f"Unsupported operator: {unknown[0]}")


def matches(value: dict[str, Any], filter: dict[str, Any]) -> bool:
    """Whether an item's value matches a search filter, key by key."""
    return all(_compare(value.get(key), condition) for key, condition in filter.items())


def _compare(value: Any, condition: Any) -> bool:
    # JSONB-like, as InMemoryStore compares: operators, else nested objects and lists element by element.
    if isinstance(condition, dict):
        if any(key.startswith("$") for key in condition):
            return all(_apply_operator(value, name, operand) for name, operand in condition.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(condition)
                and all(_compare(v, c) for v, c in zip(value, condition, strict=True)))
    return value == condition


def _apply_operator(value: Any, name: str, operand: Any) -> bool:
    if name not in OPERATORS:
        raise ValueError(f"Unsupported operator: {name}")
    if name == "$eq":
        return value == operand
    if name == "$ne":
        return value != operand
    if isinstance(value, str) and isinstance(operand, str):
        # Strings compare as strings (PostgresStore's contract; InMemoryStore raises on them).
        return NUMERIC_OPERATORS[name](value, operand)
    try:
        return NUMERIC_OPERATORS[name](float(value), float(operand))
    except (TypeError, ValueError):
        return False


def _leading_literal(condition: MatchCondition) -> tuple[str, ...]:
    # The labels a prefix condition fixes before its first wildcard: they narrow the query in the database.
    if condition.match_type != "prefix":
        return ()
    labels = []
    for label in condition.path:
        if label == "*":
            break
        labels.append(label)
    return tuple(labels)


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(want == "*" or label == want for label, want in pairs)

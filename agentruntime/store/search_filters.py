"""What a DjangoStore search filter and a list_namespaces condition mean (agentruntime/store/django_store.py), on both
databases alike."""

from __future__ import annotations

import operator
from typing import Any

from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTransform
from langgraph.store.base import MatchCondition

from agentruntime.models import StoreItem

NUMERIC_OPERATORS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
OPERATORS = {"$eq", "$ne", *NUMERIC_OPERATORS}
SCAN_CHUNK = 500


def narrowed(rows: QuerySet[StoreItem], filter: dict[str, Any]) -> QuerySet[StoreItem]:
    """`rows` narrowed in the database by the filter's conditions that it can check there (narrowable_conditions)."""
    for index, (key, operand) in enumerate(narrowable_conditions(filter)):
        alias = f"filtered_{index}"
        # Through an alias, so that a key is one JSON key whatever it holds (`__`, a lookup's name, a period).
        rows = rows.alias(**{alias: KeyTransform(key, "value")})
        kept = Q(**{alias: operand})
        if not isinstance(operand, str) and operand in (0, 1):
            kept |= Q(**{alias: bool(operand)})
        rows = rows.filter(kept)
    return rows


def narrowable_conditions(filter: dict[str, Any]) -> list[tuple[str, Any]]:
    """The (key, value) equalities of a filter that narrow the rows in the database before `matches` checks each.

    The database only has to keep a superset of what Python keeps, on both databases. Strings compare alike
    everywhere; numbers compare numerically in jsonb, SQLite and Python (1 == 1.0), and Python also takes JSON
    true for 1 and false for 0, so those are kept too (by the callers)."""
    found = []
    for key, condition in filter.items():
        operand = condition.get("$eq") if isinstance(condition, dict) and set(condition) == {"$eq"} else condition
        if plain_key(key) and _narrowable(operand):
            found.append((key, operand))
    return found


def _narrowable(operand: Any) -> bool:
    return isinstance(operand, str) or (isinstance(operand, int | float) and not isinstance(operand, bool))


def plain_key(key: str) -> bool:
    # SQLite's JSON paths cannot quote `"` and take JSON's escapes (`\\`, `\u00e9`) literally: such keys stay in Python.
    return bool(key) and key.isascii() and key.isprintable() and '"' not in key and "\\" not in key


def check_filter(filter: dict[str, Any]) -> None:
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


def leading_literal(condition: MatchCondition) -> tuple[str, ...]:
    # The labels a prefix condition fixes before its first wildcard: they narrow the query in the database.
    if condition.match_type != "prefix":
        return ()
    labels = []
    for label in condition.path:
        if label == "*":
            break
        labels.append(label)
    return tuple(labels)


def does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
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

"""The filter of a bulk export: a small part of LangSmith's filter query language.

    and(eq(is_root, true), or(eq(run_type, "llm"), has(tags, "prod")))

Supported: `and`, `or` (one or more arguments), `eq`, `neq`, `gt`, `gte`, `lt`, `lte` (a field and a
literal) and `has(tags, "…")`, over the fields `is_root` (true/false), `run_type`, `status`, `name`
(strings) and `tags` (`has` only). Strings are in double or single quotes with backslash escapes.
Anything else is an error that names the position: a filter is never partly understood.

`parse()` checks a filter (the API calls it before storing one) and `to_q()` turns it into a
Django Q over tracing.Run, so the export reader keeps using the (session, start_time, id) index.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import cast

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.expressions import RawSQL

from tracing.models import Run

MAX_LENGTH = 4000
MAX_DEPTH = 32
COMPARATORS = ("eq", "neq", "gt", "gte", "lt", "lte")
FIELDS = {"is_root": "bool", "run_type": "str", "status": "str", "name": "str", "tags": "list"}
# eq/neq against a value these fields can never hold is a typo, not an empty export.
CHOICES = {"run_type": set(Run.RunType.values), "status": set(Run.Status.values)}

_TOKEN = re.compile(r"""\s*(?:(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
                    |(?P<number>-?\d+(?:\.\d+)?)|(?P<punct>[(),]))""", re.VERBOSE)


class FilterError(ValueError):
    """The filter is not valid; the message says where and why."""


@dataclass(frozen=True)
class Comparison:
    op: str
    field: str
    value: object


@dataclass(frozen=True)
class Combination:
    op: str  # and | or
    parts: tuple


def parse(text: str):
    """Parse a filter into Comparison / Combination nodes, or raise FilterError."""
    if len(text) > MAX_LENGTH:
        raise FilterError(f"The filter is longer than {MAX_LENGTH} characters.")
    parser = _Parser(text)
    node = parser.expression(depth=0)
    parser.skip_space()
    if parser.pos != len(text):
        raise FilterError(f"Unexpected text at position {parser.pos}: {text[parser.pos:parser.pos + 20]!r}.")
    return node


def to_q(node) -> Q:
    """The Django condition over tracing.Run for a parsed filter."""
    if isinstance(node, Combination):
        parts = [to_q(part) for part in node.parts]
        combined = parts[0]
        for part in parts[1:]:
            combined = (combined & part) if node.op == "and" else (combined | part)
        return combined
    if node.op == "has":
        return Q(_has_tag(node.value))
    lookup = {"eq": "exact", "neq": "exact", "gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte"}[node.op]
    condition = Q(**{f"{node.field}__{lookup}": node.value})
    return ~condition if node.op == "neq" else condition


def _has_tag(tag: str) -> ExpressionWrapper:
    table = connection.ops.quote_name(Run._meta.db_table)
    if connection.vendor == "postgresql":
        sql, params = f"{table}.tags @> %s::jsonb", [_json_list(tag)]
    else:
        sql, params = f"EXISTS (SELECT 1 FROM json_each({table}.tags) WHERE json_each.value = %s)", [tag]
    return ExpressionWrapper(RawSQL(sql, params), output_field=BooleanField())


def _json_list(tag: str) -> str:
    return json.dumps([tag])


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def token(self) -> tuple[str, str, int]:
        self.skip_space()
        if self.pos >= len(self.text):
            raise FilterError("The filter ends too early.")
        match = _TOKEN.match(self.text, self.pos)
        if match is None:
            raise FilterError(f"Unexpected character at position {self.pos}: {self.text[self.pos]!r}.")
        start = self.pos
        self.pos = match.end()
        kind = cast(str, match.lastgroup)  # every alternative of _TOKEN is a named group
        return kind, match.group(kind), start

    def expect(self, punct: str) -> None:
        kind, value, start = self.token()
        if (kind, value) != ("punct", punct):
            raise FilterError(f"Expected {punct!r} at position {start}, found {value!r}.")

    def expression(self, depth: int):
        if depth > MAX_DEPTH:
            raise FilterError(f"The filter nests deeper than {MAX_DEPTH} levels.")
        kind, name, start = self.token()
        if kind != "ident":
            raise FilterError(f"Expected an operator such as eq( or and( at position {start}, found {name!r}.")
        if name not in (*COMPARATORS, "has", "and", "or"):
            raise FilterError(f"Unsupported operator {name!r} at position {start}: use one of "
                              f"{', '.join((*COMPARATORS, 'has', 'and', 'or'))}.")
        self.expect("(")
        if name in ("and", "or"):
            parts = [self.expression(depth + 1)]
            while self._next_is(","):
                parts.append(self.expression(depth + 1))
            self.expect(")")
            return Combination(name, tuple(parts))
        field = self._field(name)
        self.expect(",")
        value = self._literal(name, field)
        self.expect(")")
        return Comparison(name, field, value)

    def _next_is(self, punct: str) -> bool:
        self.skip_space()
        if self.text.startswith(punct, self.pos):
            self.pos += len(punct)
            return True
        return False

    def _field(self, op: str) -> str:
        kind, field, start = self.token()
        if kind != "ident" or field not in FIELDS:
            raise FilterError(f"Unsupported field {field!r} at position {start}: filters may use "
                              f"{', '.join(FIELDS)}.")
        if (op == "has") != (FIELDS[field] == "list"):
            allowed = "has" if FIELDS[field] == "list" else ", ".join(COMPARATORS)
            raise FilterError(f"{op}() does not apply to {field} (position {start}): use {allowed}.")
        if FIELDS[field] == "bool" and op not in ("eq", "neq"):
            raise FilterError(f"{field} is true or false: only eq and neq apply (position {start}).")
        return field

    def _literal(self, op: str, field: str):
        kind, raw, start = self.token()
        expected = FIELDS[field]
        if expected == "bool":
            if kind != "ident" or raw not in ("true", "false"):
                raise FilterError(f"{field} takes true or false, not {raw!r} (position {start}).")
            return raw == "true"
        if kind != "string":
            raise FilterError(f"{field} takes a quoted string, not {raw!r} (position {start}).")
        value = _unquote(raw)
        if op in ("eq", "neq") and field in CHOICES and value not in CHOICES[field]:
            raise FilterError(f"{value!r} is not a {field} (position {start}): one of "
                              f"{', '.join(sorted(CHOICES[field]))}.")
        return value


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)

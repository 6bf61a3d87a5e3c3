"""The one policy for JSON that enters the service, on every route: REST, the Agent Server API, the chat protocol.

- Valid JSON in UTF-8 with no lone surrogate (`"\\ud800"`): no database can store one as text.
- No NUL character (`"\\u0000"`) in any string or key: PostgreSQL's JSONB and text cannot hold it, SQLite can, and
  the same input must get the same answer on both. (Trace ingestion removes NULs instead, as data the SDK captured:
  tracing/ingest_bodies.py.)
- At most MAX_DEPTH levels of nesting: deeper values pass the parser but break the recursive encoders that read
  them back later (a store item 600 levels deep made every read of its owner's store fail).

A refused body is a validation error in its route's own shape: 422 `{"detail": [...]}` for REST and the Agent
Server API (core.parsers), 400 `invalid_argument` for the chat protocol (chat/sse_consumer.py). A path with a NUL
names nothing that can exist: 404 (core.middleware).
"""

from __future__ import annotations

from typing import Any

import orjson

MAX_DEPTH = 100


class JsonRefused(ValueError):
    """The body breaks the policy; the message says how, for the caller."""


def loads(raw: bytes | str) -> Any:
    """Parse `raw` under the policy.

    Raises:
        JsonRefused: not JSON (a lone surrogate included), a NUL in a string or key, or nested too deep.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise JsonRefused(f"The body is not valid JSON: {exc}") from None
    # JSON carries a NUL only as an escape: a byte search finds every candidate cheaply.
    check(value, nul=(b"\\u0000" if isinstance(raw, bytes) else "\\u0000") in raw)  # type: ignore[operator]
    return value


def check(value: Any, *, nul: bool = True) -> None:
    """Refuse a parsed value that is nested too deep or (with `nul`) holds a NUL in a string or key."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                raise JsonRefused(f"The body is nested more than {MAX_DEPTH} levels deep.")
            if nul and any("\x00" in key for key in item):
                raise JsonRefused("The body holds a NUL character (\\u0000) in a key: it cannot be stored.")
            pending.extend((child, depth + 1) for child in item.values() if nul or isinstance(child, dict | list))
        elif isinstance(item, list):
            if depth >= MAX_DEPTH:
                raise JsonRefused(f"The body is nested more than {MAX_DEPTH} levels deep.")
            pending.extend((child, depth + 1) for child in item if nul or isinstance(child, dict | list))
        elif nul and isinstance(item, str) and "\x00" in item:
            raise JsonRefused("The body holds a NUL character (\\u0000) in a string: it cannot be stored.")

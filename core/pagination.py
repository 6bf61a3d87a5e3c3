"""Query parameters that page through lists, bounded the same way on every list endpoint.

An offset or limit goes straight into SQL's OFFSET/LIMIT, where a value past 64 bits overflows the
driver (SQLite raises OverflowError). No list gets anywhere near MAX_OFFSET, so the bound only turns
absurd values into a 422 that names the parameter, and `offset + limit` always fits in 64 bits.
"""

from __future__ import annotations

from rest_framework import serializers

MAX_OFFSET = 1_000_000_000


def limit_field(*, default: int, maximum: int) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=maximum, default=default,
                                    help_text=f"1 to {maximum}, default {default}.")


def offset_field() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, default=0,
                                    help_text=f"0 to {MAX_OFFSET}, default 0.")

"""The Parquet side of exports: the schema of exported trace runs and turning database rows into Arrow.

Rows are selected with SQL expressions that produce what Parquet stores (UUIDs as canonical
strings, JSON as text, costs as doubles) or what Arrow turns into it in bulk (SQLite's timestamps as
text, its booleans as integers, its UUIDs as 32 hex digits), so a batch becomes Arrow columns without
a Python object per value beyond what the database driver returns.

Schema (docs/exports.md, "Files"): UUID columns and `name`, `run_type`, `status`, `dotted_order`,
`trace_tier`, `error` are strings; `parent_run_ids`, `inputs`, `outputs`, `extra`, `events`,
`tags`, `feedback_stats` are JSON-encoded strings; `start_time`, `end_time`, `first_token_time` are
timestamps in microseconds (UTC: v1 without a time zone, v2_beta with `tz=UTC`); `is_root` is a
boolean; token counts are int64; costs are float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from tracing.selectors import EXPORT_FIELDS

UUID_FIELDS = ("id", "tenant_id", "session_id", "trace_id", "parent_run_id", "reference_example_id")
JSON_FIELDS = ("parent_run_ids", "inputs", "outputs", "extra", "events", "tags", "feedback_stats")
TIME_FIELDS = ("start_time", "end_time", "first_token_time")
INT_FIELDS = ("total_tokens", "prompt_tokens", "completion_tokens")
FLOAT_FIELDS = ("total_cost", "prompt_cost", "completion_cost")
BOOL_FIELDS = ("is_root",)

# Parquet codec names of the API's `compression` values.
CODECS = {"none": "NONE", "gzip": "GZIP", "snappy": "SNAPPY", "zstandard": "ZSTD"}
# gzip at zlib's own default level: Arrow's default (9) is ~2.7x slower for files ~0.4 % smaller.
CODEC_LEVELS = {"gzip": 6}
RUN_TABLE = "tracing_run"
# Arrow memory of exports comes from the C library's allocator: pyarrow's default pool (mimalloc) keeps
# freed pages for reuse and held ~20 MiB more at the peak of a 1,000,000-trace-run export (docs/benchmarks.md).
MEMORY_POOL = pa.system_memory_pool()


def arrow_type(field: str, format_version: str) -> pa.DataType:
    if field in TIME_FIELDS:
        return pa.timestamp("us", tz="UTC") if format_version == "v2_beta" else pa.timestamp("us")
    if field in INT_FIELDS:
        return pa.int64()
    if field in FLOAT_FIELDS:
        return pa.float64()
    if field in BOOL_FIELDS:
        return pa.bool_()
    return pa.string()


def schema(fields: list[str], format_version: str) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(name, format_version)) for name in fields])


def export_fields(requested: list[str] | None) -> list[str]:
    """The columns of an export: the requested ones in their order, or all 29."""
    return list(requested) if requested else list(EXPORT_FIELDS)


def select_sql(field: str, vendor: str) -> str:
    """The SQL expression that selects `field` of tracing_run in its Parquet form."""
    column = f'"{RUN_TABLE}"."{field}"'
    if vendor == "postgresql":
        if field in TIME_FIELDS:
            return _epoch_micros(column)
        if field in UUID_FIELDS or field in JSON_FIELDS:
            return f"{column}::text"
        if field in FLOAT_FIELDS:
            return f"{column}::float8"
        return column
    # SQLite: Django stores UUIDs as 32 hex digits and decimals as numbers. Bare datetime and bool
    # columns would be converted row by row in Python by the driver (declared-type converters): an
    # expression has no declared type, so Arrow gets the text and the integer and converts in bulk.
    # UUIDs come as they are stored and Arrow adds the dashes (_dashed_uuids): in SQL, with substr(), the
    # dashes took ~40 % of the time SQLite spent reading a page of the bench's rows.
    if field in TIME_FIELDS:
        return f"CAST({column} AS TEXT)"
    if field in BOOL_FIELDS:
        return f"CAST({column} AS INTEGER)"
    if field in FLOAT_FIELDS:
        return f"CAST({column} AS REAL)"
    return column


def _epoch_micros(column: str) -> str:
    # Integers, not timestamptz: the driver's per-value datetime loading would cost more than the
    # whole rest of the conversion, and Arrow reads microseconds since the epoch as they are.
    return f"(EXTRACT(EPOCH FROM {column}) * 1000000)::int8"


class BatchConverter:
    """Rows of an export's SELECT as Arrow record batches of the export's schema.

    Made once per export run: the schema and each column's conversion are worked out here, not per batch.
    Rows are tuples whose columns from `offset` on are `fields` (the columns before them are the reader's).
    """

    def __init__(self, fields: list[str], format_version: str, vendor: str, *, offset: int = 0):
        self.schema = schema(fields, format_version)
        self.offset = offset
        self.width = offset + len(fields)
        self.columns = [(offset + i, _converter(field, self.schema.field(i).type, vendor))
                        for i, field in enumerate(fields)]

    def __call__(self, rows: list[tuple]) -> pa.RecordBatch:
        columns = list(zip(*rows, strict=True)) if rows else [()] * self.width
        return pa.RecordBatch.from_arrays([convert(columns[i]) for i, convert in self.columns], schema=self.schema)


def _converter(field: str, target: pa.DataType, vendor: str) -> Callable[[Sequence], pa.Array]:
    """How one column's driver values become an Arrow array of the schema's type."""
    pool = MEMORY_POOL
    if field in TIME_FIELDS and vendor != "postgresql":
        # SQLite keeps naive UTC text ("2026-01-02 03:04:05.123456"): parsed by Arrow, in bulk.
        naive = pa.timestamp("us")

        def from_text(values: Sequence) -> pa.Array:
            parsed = pa.array(values, type=pa.string(), memory_pool=pool).cast(naive, memory_pool=pool)
            return parsed if target == naive else parsed.cast(target, memory_pool=pool)
        return from_text
    if field in BOOL_FIELDS and vendor != "postgresql":
        def from_integers(values: Sequence) -> pa.Array:
            return pa.array(values, type=pa.int8(), memory_pool=pool).cast(pa.bool_(), memory_pool=pool)
        return from_integers
    if field in UUID_FIELDS and vendor != "postgresql":
        return _dashed_uuids
    # PostgreSQL timestamps are microseconds since the epoch (UTC, see _epoch_micros()): Arrow takes them as they are.
    return partial(pa.array, type=target, memory_pool=pool)


# The 8-4-4-4-12 groups of a UUID's 32 hex digits.
_UUID_GROUPS = ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))


def _dashed_uuids(values: Sequence) -> pa.Array:
    """SQLite's UUIDs (32 hex digits, or null) in their canonical form, as substr() and || would make it in SQL."""
    pool = MEMORY_POOL
    # As bytes: slicing and joining bytes are the cheap kernels; hex digits and dashes are ASCII, valid UTF-8.
    digits = pa.array(values, type=pa.string(), memory_pool=pool).view(pa.binary())
    groups = [pc.binary_slice(digits, start, stop, memory_pool=pool) for start, stop in _UUID_GROUPS]
    # Cast, not view: Arrow checks that the result is UTF-8 (a stored value that is not hex digits could be cut
    # inside a character).
    return pc.binary_join_element_wise(*groups, b"-", memory_pool=pool).cast(pa.string(), memory_pool=pool)

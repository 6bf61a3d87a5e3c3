"""The Parquet side of exports: the schema of exported trace runs and turning database rows into Arrow.

Rows are selected with SQL expressions that already produce what Parquet stores (UUIDs as
canonical strings, JSON as text, costs as doubles), so a batch becomes Arrow columns without a
Python object per value beyond what the database driver returns.

Schema (docs/exports.md, "Files"): UUID columns and `name`, `run_type`, `status`, `dotted_order`,
`trace_tier`, `error` are strings; `parent_run_ids`, `inputs`, `outputs`, `extra`, `events`,
`tags`, `feedback_stats` are JSON-encoded strings; `start_time`, `end_time`, `first_token_time` are
timestamps in microseconds (UTC: v1 without a time zone, v2_beta with `tz=UTC`); `is_root` is a
boolean; token counts are int64; costs are float64.
"""

from __future__ import annotations

import pyarrow as pa

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
    if field in TIME_FIELDS:
        return f"CAST({column} AS TEXT)"
    if field in BOOL_FIELDS:
        return f"CAST({column} AS INTEGER)"
    if field in UUID_FIELDS:
        return (f"substr({column},1,8)||'-'||substr({column},9,4)||'-'||substr({column},13,4)||'-'||"
                f"substr({column},17,4)||'-'||substr({column},21,12)")
    if field in FLOAT_FIELDS:
        return f"CAST({column} AS REAL)"
    return column


def cursor_sql(vendor: str) -> tuple[str, str]:
    """SQL of the (start_time, id) of a row, as text or integers (the reader turns the last row of a
    chunk back into a datetime and a UUID for the next keyset query)."""
    if vendor == "postgresql":
        return _epoch_micros(f'"{RUN_TABLE}"."start_time"'), f'"{RUN_TABLE}"."id"::text'
    return f'CAST("{RUN_TABLE}"."start_time" AS TEXT)', f'"{RUN_TABLE}"."id"'


def _epoch_micros(column: str) -> str:
    # Integers, not timestamptz: the driver's per-value datetime loading would cost more than the
    # whole rest of the conversion, and Arrow reads microseconds since the epoch as they are.
    return f"(EXTRACT(EPOCH FROM {column}) * 1000000)::int8"


def column_array(values, field: str, format_version: str, vendor: str) -> pa.Array:
    """One column of a batch (a sequence of driver values) as an Arrow array of the schema's type."""
    target = arrow_type(field, format_version)
    pool = MEMORY_POOL
    if field in TIME_FIELDS and vendor != "postgresql":
        # SQLite keeps naive UTC text ("2026-01-02 03:04:05.123456").
        text = pa.array(values, type=pa.string(), memory_pool=pool)
        return text.cast(pa.timestamp("us"), memory_pool=pool).cast(target, memory_pool=pool)
    if field in BOOL_FIELDS and vendor != "postgresql":
        return pa.array(values, type=pa.int8(), memory_pool=pool).cast(pa.bool_(), memory_pool=pool)
    # PostgreSQL timestamps are microseconds since the epoch (UTC, see _epoch_micros()): Arrow takes them as they are.
    return pa.array(values, type=target, memory_pool=pool)


def record_batch(rows: list[tuple], fields: list[str], format_version: str, vendor: str,
                 offset: int = 0) -> pa.RecordBatch:
    """Rows (tuples whose columns from `offset` on are `fields`) as one Arrow record batch."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(offset + len(fields))]
    arrays = [column_array(columns[offset + i], name, format_version, vendor) for i, name in enumerate(fields)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema(fields, format_version))

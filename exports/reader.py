"""Reading a partition's runs for export: keyset pages in (start_time, id) order, as Arrow batches.

Each page is one query on the (session, start_time, id) index:

    WHERE session_id = ? AND start_time >= ? AND start_time < ? AND (start_time, id) > (cursor)
    [AND <filter>] ORDER BY start_time, id LIMIT EXPORT_BATCH_ROWS

It is read in chunks (a server-side cursor in a short read-only transaction on PostgreSQL; SQLite
steps its statement lazily anyway) whose size adapts to the row size, and it ends early once it
holds EXPORT_ROW_GROUP_BYTES of Arrow data: memory stays bounded even for very large runs. A page
is read completely before anything is written, so no transaction stays open during uploads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from django.db import connection, transaction
from django.db.models import Q, TextField
from django.db.models.expressions import RawSQL

from exports import parquet
from tracing.selectors import export_queryset

CHUNK_TARGET_BYTES = 4 * 1024 * 1024
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS, FIRST_CHUNK_ROWS = 16, 5000, 500

Cursor = tuple[datetime, uuid.UUID]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Page:
    # Each Arrow batch with the (start_time, id) of its last row.
    batches: list[tuple[pa.RecordBatch, Cursor]] = field(default_factory=list)
    rows: int = 0
    nbytes: int = 0
    cursor: Cursor | None = None  # the (start_time, id) of the page's last row
    last: bool = False  # no rows after this page


def cursor_to_string(cursor: Cursor) -> str:
    return f"{cursor[0].astimezone(UTC).isoformat()},{cursor[1]}"


def cursor_from_string(value: str | None) -> Cursor | None:
    if not value:
        return None
    when, _, run_id = value.partition(",")
    return datetime.fromisoformat(when), uuid.UUID(run_id)


class PartitionReader:
    def __init__(self, *, session_id: uuid.UUID, start: datetime, end: datetime, fields: list[str],
                 format_version: str, condition: Q | None, page_rows: int, page_bytes: int):
        self.session_id, self.start, self.end = session_id, start, end
        self.fields = fields
        self.format_version = format_version
        self.condition = condition
        self.page_rows = max(1, page_rows)
        self.page_bytes = page_bytes
        self.vendor = connection.vendor
        self.chunk_rows = FIRST_CHUNK_ROWS

    def pages(self, after: Cursor | None) -> Iterator[Page]:
        while True:
            page = self.read_page(after)
            if page.rows:
                yield page
            if page.last or not page.rows:
                return
            after = page.cursor

    def read_page(self, after: Cursor | None) -> Page:
        sql, params = self._page_sql(after)
        if self.vendor == "postgresql":
            with transaction.atomic():
                cursor = connection.chunked_cursor()
                try:
                    return self._read(cursor, sql, params)
                finally:
                    cursor.close()
        with connection.cursor() as cursor:
            return self._read(cursor, sql, params)

    def _page_sql(self, after: Cursor | None) -> tuple[str, tuple]:
        runs = export_queryset(session_id=self.session_id, start=self.start, end=self.end, after=after)
        if self.condition is not None:
            runs = runs.filter(self.condition)
        # The first two columns are the (start_time, id) of the row (the cursor) in the database's own form.
        sources = [*parquet.cursor_sql(self.vendor), *(parquet.select_sql(name, self.vendor) for name in self.fields)]
        columns = {f"x{i}": RawSQL(sql, (), output_field=TextField()) for i, sql in enumerate(sources)}
        runs = runs.annotate(**columns).values_list(*columns)[:self.page_rows]
        return runs.query.sql_with_params()

    def _read(self, cursor, sql: str, params: tuple) -> Page:
        page = Page()
        cursor.execute(sql, params)
        while page.rows < self.page_rows and page.nbytes < self.page_bytes:
            rows = cursor.fetchmany(min(self.chunk_rows, self.page_rows - page.rows))
            if not rows:
                page.last = True
                break
            batch = parquet.record_batch(rows, self.fields, self.format_version, self.vendor, offset=2)
            page.cursor = self._cursor(rows[-1])
            page.batches.append((batch, page.cursor))
            page.rows += len(rows)
            page.nbytes += batch.nbytes
            self.chunk_rows = max(MIN_CHUNK_ROWS, min(MAX_CHUNK_ROWS,
                                                      CHUNK_TARGET_BYTES * len(rows) // max(1, batch.nbytes)))
        return page

    def _cursor(self, row: tuple) -> Cursor:
        start_time, run_id = row[0], row[1]
        if isinstance(start_time, int):  # PostgreSQL: microseconds since the epoch
            start_time = EPOCH + timedelta(microseconds=start_time)
        else:  # SQLite: naive UTC text
            start_time = datetime.fromisoformat(start_time).replace(tzinfo=UTC)
        return start_time, uuid.UUID(run_id)  # canonical text, or SQLite's 32 hex digits

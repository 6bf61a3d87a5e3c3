"""Reading a partition's trace runs for export: keyset pages in (start_time, id) order, as Arrow batches.

Each page is one query on the (session, start_time, id) index:

    WHERE session_id = ? AND start_time >= ? AND start_time < ? AND (start_time, id) > (cursor)
    [AND <filter>] ORDER BY start_time, id LIMIT EXPORT_BATCH_ROWS

It is read in fetches (a server-side cursor in a short read-only transaction on PostgreSQL; SQLite
steps its statement lazily anyway) of about EXPORT_FETCH_BYTES of Arrow data each: the rows of one
fetch are the only ones alive as Python objects. A page ends early once it holds the Arrow data the
caller has room for (what the row group being built leaves of EXPORT_ROW_GROUP_BYTES), so memory
stays bounded whatever the size of the trace runs. A page is read completely before anything is written,
so no transaction stays open during uploads.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from django.db import connection, transaction
from django.db.models import Q, TextField
from django.db.models.expressions import RawSQL

from exports.bulk_exports import parquet
from tracing.selectors import export_queryset

# The first fetch has no row size to go by: a few rows give it, whatever the size of the trace runs.
MIN_FETCH_ROWS, MAX_FETCH_ROWS = 16, 5000

Cursor = tuple[datetime, uuid.UUID]
CURSOR_FIELDS = ("start_time", "id")
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
                 format_version: str, condition: Q | None, page_rows: int, fetch_bytes: int):
        self.session_id, self.start, self.end = session_id, start, end
        self.fields = fields
        self.format_version = format_version
        self.condition = condition
        self.page_rows = max(1, page_rows)
        self.fetch_bytes = max(1, fetch_bytes)
        self.vendor = connection.vendor
        # The keyset cursor comes from the row's exported start_time and id; a column the export leaves out is
        # selected for the cursor alone, before the exported ones.
        self.cursor_only = [name for name in CURSOR_FIELDS if name not in fields]
        selected = [*self.cursor_only, *fields]
        self.cursor_at = tuple(selected.index(name) for name in CURSOR_FIELDS)
        self.sources = [parquet.select_sql(name, self.vendor) for name in selected]
        self.to_batch = parquet.BatchConverter(fields, format_version, self.vendor, offset=len(self.cursor_only))
        self.fetch_rows = MIN_FETCH_ROWS
        self.row_bytes = 0  # Arrow bytes per row of the last fetch

    def pages(self, after: Cursor | None, room: Callable[[], int]) -> Iterator[Page]:
        """Pages after `after`; `room()` says how much Arrow data the next page may hold."""
        while True:
            page = self.read_page(after, max_bytes=room())
            if page.rows:
                yield page
            if page.last or not page.rows:
                return
            after = page.cursor

    def read_page(self, after: Cursor | None, *, max_bytes: int) -> Page:
        sql, params = self._page_sql(after)
        if self.vendor == "postgresql":
            with transaction.atomic():
                cursor = connection.chunked_cursor()
                try:
                    return self._read(cursor, sql, params, max_bytes)
                finally:
                    cursor.close()
        with connection.cursor() as cursor:
            return self._read(cursor, sql, params, max_bytes)

    def _page_sql(self, after: Cursor | None) -> tuple[str, tuple]:
        trace_runs = export_queryset(session_id=self.session_id, start=self.start, end=self.end, after=after)
        if self.condition is not None:
            trace_runs = trace_runs.filter(self.condition)
        columns = {f"x{i}": RawSQL(sql, (), output_field=TextField()) for i, sql in enumerate(self.sources)}
        trace_runs = trace_runs.annotate(**columns).values_list(*columns)[:self.page_rows]
        return trace_runs.query.sql_with_params()

    def _read(self, cursor, sql: str, params: tuple, max_bytes: int) -> Page:
        page = Page()
        cursor.execute(sql, params)
        while page.rows < self.page_rows and page.nbytes < max_bytes:
            rows = cursor.fetchmany(self._fetch_size(page, max_bytes))
            if not rows:
                page.last = True
                break
            batch = self.to_batch(rows)
            page.cursor = self._cursor(rows[-1])
            page.batches.append((batch, page.cursor))
            page.rows += len(rows)
            page.nbytes += batch.nbytes
            self.row_bytes = max(1, batch.nbytes // len(rows))
            self.fetch_rows = max(MIN_FETCH_ROWS, min(MAX_FETCH_ROWS, self.fetch_bytes // self.row_bytes))
        return page

    def _fetch_size(self, page: Page, max_bytes: int) -> int:
        """Rows of the next fetch: EXPORT_FETCH_BYTES worth, no more than the page still has room for."""
        rows = min(self.fetch_rows, self.page_rows - page.rows)
        if self.row_bytes:
            rows = min(rows, max(MIN_FETCH_ROWS, (max_bytes - page.nbytes) // self.row_bytes))
        return max(1, rows)

    def _cursor(self, row: tuple) -> Cursor:
        start_time, run_id = (row[i] for i in self.cursor_at)
        if isinstance(start_time, int):  # PostgreSQL: microseconds since the epoch
            start_time = EPOCH + timedelta(microseconds=start_time)
        else:  # SQLite: naive UTC text
            start_time = datetime.fromisoformat(start_time).replace(tzinfo=UTC)
        return start_time, uuid.UUID(run_id)  # the exported (canonical) text

"""The statements every run executes several times, written out instead of built by the ORM.

Each batch of a run's events bumps its thread's counter, checks that the run is still running and inserts the
events; each stream and waiter reads where its thread's log ends and what it holds. Building and compiling such a
query through the ORM costs ten times what SQLite takes to run it (≈150 µs against ≈15 µs), and it holds the GIL
against the event loop that runs the graphs and the streams. The public functions stay in agentruntime/writes/ and
agentruntime/reads.py; this module only executes, on the calling thread's connection (and transaction).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import connection

from agentruntime.models import ChatEvent, ChatRun, ChatThread

_THREAD, _RUN, _EVENT = (m._meta.db_table for m in (ChatThread, ChatRun, ChatEvent))
_RUN_ID = ChatRun._meta.pk

_BUMP = f"UPDATE {_THREAD} SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq"
_RUN_HAS_STATUS = f"SELECT 1 FROM {_RUN} WHERE id = %s AND status = %s"
_INSERT = (f"INSERT INTO {_EVENT} (thread_id, run_id, seq, channel, namespace, payload) "
           f"VALUES (%s, %s, %s, %s, %s, %s)")
_RUN_STATE = f"SELECT thread_id, status, error FROM {_RUN} WHERE id = %s"
_RUN_FRAMES = (f"SELECT payload FROM {_EVENT} WHERE thread_id = %s AND run_id = %s AND channel = %s "
               f"ORDER BY seq")
_CURSOR_STATE = f"SELECT last_seq, expired_through_seq FROM {_THREAD} WHERE id = %s"
_AFTER = (f"SELECT seq, channel, namespace, payload FROM {_EVENT} WHERE thread_id = %s AND seq > %s "
          f"ORDER BY seq LIMIT %s")


def run_id_value(run_id: uuid.UUID | str):
    """The run id as the database holds it (32 hex digits on SQLite, a uuid on PostgreSQL)."""
    return _RUN_ID.get_db_prep_value(run_id, connection)


def bump_last_seq(*, thread_id: str, count: int) -> int | None:
    """Add `count` to the thread's last seq and return the new one (None: no such thread)."""
    with connection.cursor() as cursor:
        if connection.features.can_return_rows_from_bulk_insert:  # RETURNING: PostgreSQL, SQLite >= 3.35
            cursor.execute(_BUMP, [count, thread_id])
        else:
            cursor.execute(_BUMP.removesuffix(" RETURNING last_seq"), [count, thread_id])
            cursor.execute(_CURSOR_STATE, [thread_id])
        row = cursor.fetchone()
    return None if row is None else row[0]


def run_has_status(*, run_id: uuid.UUID | str, status: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_RUN_HAS_STATUS, [run_id_value(run_id), status])
        return cursor.fetchone() is not None


def insert_events(rows: Sequence[tuple]) -> None:
    """Insert (thread_id, run id value, seq, channel, namespace JSON, payload text) rows."""
    with connection.cursor() as cursor:
        cursor.executemany(_INSERT, rows)


def cursor_state(*, thread_id: str) -> tuple[int, int] | None:
    with connection.cursor() as cursor:
        cursor.execute(_CURSOR_STATE, [thread_id])
        return cursor.fetchone()


def events_after(*, thread_id: str, after_seq: int, limit: int) -> list[tuple]:
    """(seq, channel, namespace JSON, payload text) of the thread's events after `after_seq`, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(_AFTER, [thread_id, after_seq, limit])
        return cursor.fetchall()


def run_state(*, run_id: uuid.UUID | str) -> tuple[str, str, str] | None:
    """(thread id, status, error) of the run, or None when there is no such run."""
    with connection.cursor() as cursor:
        cursor.execute(_RUN_STATE, [run_id_value(run_id)])
        return cursor.fetchone()


def run_frame_payloads(*, thread_id: str, run_id: uuid.UUID | str, channel: str) -> list[str]:
    """The payloads of the run's events on `channel` (its Agent Server frames), oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(_RUN_FRAMES, [thread_id, run_id_value(run_id), channel])
        return [payload for (payload,) in cursor.fetchall()]

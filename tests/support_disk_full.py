"""A full disk under the database, injected at the driver for servers whose database cannot sit on a small tmpfs.

`install()` (called by tests/disk_full_settings.py, in the server process) makes every write statement raise the
driver's own "disk full" error while the file named by DISK_FULL_FLAG exists: SQLite's `database or disk is full`,
PostgreSQL's DiskFull (SQLSTATE 53100). Django wraps them as it wraps the real ones; reads are untouched.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)
POSTGRES_MESSAGE = 'could not extend file "base/16384/16385": No space left on device'
SQLITE_MESSAGE = "database or disk is full"


def _disk_full_error(vendor: str) -> Exception:
    if vendor == "postgresql":
        import psycopg.errors

        return psycopg.errors.DiskFull(POSTGRES_MESSAGE)
    import sqlite3

    return sqlite3.OperationalError(SQLITE_MESSAGE)


def install() -> None:
    """In a server process: refuse writes while the file named by DISK_FULL_FLAG exists."""
    flag = os.environ["DISK_FULL_FLAG"]
    _refuse_writes_when(lambda: os.path.exists(flag))


@contextmanager
def writes_refused():
    """In this process: refuse every write inside the block."""
    from django.db.backends import utils

    original = utils.CursorWrapper._execute, utils.CursorWrapper._executemany
    _refuse_writes_when(lambda: True)
    try:
        yield
    finally:
        utils.CursorWrapper._execute, utils.CursorWrapper._executemany = original


def _refuse_writes_when(is_full) -> None:
    from django.db.backends import utils

    execute, executemany = utils.CursorWrapper._execute, utils.CursorWrapper._executemany

    def refuse_writes(self, sql) -> None:
        if is_full() and WRITE.match(sql):
            with self.db.wrap_database_errors:
                raise _disk_full_error(self.db.vendor)

    def _execute(self, sql, params, *args):
        refuse_writes(self, sql)
        return execute(self, sql, params, *args)

    def _executemany(self, sql, param_list, *args):
        refuse_writes(self, sql)
        return executemany(self, sql, param_list, *args)

    utils.CursorWrapper._execute = _execute
    utils.CursorWrapper._executemany = _executemany

"""Keeping an SQLite database readable when its disk is full.

SQLite deletes a WAL database's -wal and -shm files when the last connection to it closes, and the next connection
must create them again before it can read anything; on a full disk it cannot ("disk I/O error"). Django closes its
connections after every request, so a quiet moment would leave a full disk with no readable database. One
connection held open for the life of the process keeps the files, and reads keep working.
"""

from __future__ import annotations

import logging
import sqlite3

from django.db import connections

log = logging.getLogger("core.sqlite")
_held: list[sqlite3.Connection] = []


def hold_database_files() -> None:
    """Open (once) and keep a connection to the default database when it is SQLite; nothing otherwise."""
    settings_dict = connections["default"].settings_dict
    if _held or settings_dict["ENGINE"] != "django.db.backends.sqlite3":
        return
    try:
        held = sqlite3.connect(str(settings_dict["NAME"]), check_same_thread=False)
        # A read maps the -shm file; the connection then only exists, it never holds a transaction open.
        held.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error:
        log.warning("could not hold the SQLite database open; reads may fail when its disk is full", exc_info=True)
        return
    _held.append(held)

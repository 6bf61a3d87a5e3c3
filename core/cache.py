"""The database cache, made to report the writes it cannot make, and to make them in one statement.

Django's DatabaseCache swallows a failed `set` (it returns nothing either way), so a throttle on a full disk would
silently stop counting. This one raises CacheWriteError instead; core.throttling lets the request through and logs.

Django writes a key with SELECT, then UPDATE or INSERT, in a transaction of its own (BEGIN, COMMIT): five round
trips with the size check, on every throttled request. Here `set` replaces a key that is there with one UPDATE
(replacing cannot grow the table, so it needs no size check); a new key gets the same size check and cull as
Django's, then one upsert (`INSERT … ON CONFLICT DO UPDATE`, which SQLite and PostgreSQL both have): the same row,
in one round trip for the throttle's usual write, three for its first.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import DatabaseError, connections, router, transaction
from django.db.backends.utils import CursorWrapper
from django.utils.timezone import now as tz_now


class CacheWriteError(Exception):
    pass


class DatabaseCache(DjangoDatabaseCache):
    # Private members of Django's DatabaseCache, which django-stubs leaves out.
    _table: str
    _cull: Callable[[str, CursorWrapper, datetime, int], None]

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        key = self.make_and_validate_key(key, version=version)
        if not self._upsert(key, value, timeout):
            raise CacheWriteError("the database refused the cache write")

    def _upsert(self, key: str, value, timeout) -> bool:
        timeout = self.get_backend_timeout(timeout)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        quote = connection.ops.quote_name
        table = quote(self._table)
        key_column, value_column, expires_column = (quote(name) for name in ("cache_key", "value", "expires"))
        expires = datetime.max if timeout is None else datetime.fromtimestamp(
            timeout, tz=UTC if settings.USE_TZ else None)
        encoded = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
        expires_value = connection.ops.adapt_datetimefield_value(expires.replace(microsecond=0))
        with connection.cursor() as cursor:
            # Usually the key is there already (a throttle's history): replacing it cannot grow the table, so it
            # needs no count and no cull, and takes one statement.
            update = f"UPDATE {table} SET {value_column} = %s, {expires_column} = %s WHERE {key_column} = %s"
            replaced = self._execute(connection, db, cursor, update, [encoded, expires_value, key])
            if replaced is None:
                return False
            if replaced:
                return True
            # As Django's own set: cull before adding a key once the table holds more than MAX_ENTRIES.
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            entries = cursor.fetchone()[0]
            if entries > self._max_entries:
                self._cull(db, cursor, tz_now().replace(microsecond=0), entries)
            # An upsert: another process may have added the key since the UPDATE.
            sql = (f"INSERT INTO {table} ({key_column}, {value_column}, {expires_column}) VALUES (%s, %s, %s) "
                   f"ON CONFLICT ({key_column}) DO UPDATE SET {value_column} = EXCLUDED.{value_column}, "
                   f"{expires_column} = EXCLUDED.{expires_column}")
            return self._execute(connection, db, cursor, sql, [key, encoded, expires_value]) is not None

    @staticmethod
    def _execute(connection, db: str, cursor: CursorWrapper, sql: str, params: list) -> int | None:
        """Run one write: the rows it changed, or None when the database refused it."""
        try:
            if connection.in_atomic_block:
                # A savepoint, as Django's own set has: a failed write must not break the caller's transaction.
                with transaction.atomic(using=db):
                    cursor.execute(sql, params)
            else:
                cursor.execute(sql, params)  # one statement: atomic by itself
        except DatabaseError:
            return None
        return cursor.rowcount

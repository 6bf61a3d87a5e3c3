"""The database cache, made to report the writes it cannot make, and to make them in one statement.

Django's DatabaseCache swallows a failed `set` (it returns nothing either way), so a throttle on a full disk would
silently stop counting. This one raises CacheWriteError instead; core.throttling lets the request through and logs.

Django writes a key with SELECT, then UPDATE or INSERT, in a transaction of its own (BEGIN, COMMIT): five round
trips with the size check, on every throttled request. Here `set` is one upsert (`INSERT … ON CONFLICT DO UPDATE`,
which SQLite and PostgreSQL both have) after the same size check: the same row, two round trips.
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
        with connection.cursor() as cursor:
            # As Django's own set: cull before writing once the table holds more than MAX_ENTRIES.
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            entries = cursor.fetchone()[0]
            if entries > self._max_entries:
                self._cull(db, cursor, tz_now().replace(microsecond=0), entries)
            expires = datetime.max if timeout is None else datetime.fromtimestamp(
                timeout, tz=UTC if settings.USE_TZ else None)
            encoded = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
            sql = (f"INSERT INTO {table} ({key_column}, {value_column}, {expires_column}) VALUES (%s, %s, %s) "
                   f"ON CONFLICT ({key_column}) DO UPDATE SET {value_column} = EXCLUDED.{value_column}, "
                   f"{expires_column} = EXCLUDED.{expires_column}")
            params = [key, encoded, connection.ops.adapt_datetimefield_value(expires.replace(microsecond=0))]
            try:
                if connection.in_atomic_block:
                    # A savepoint, as Django's own set has: a failed write must not break the caller's transaction.
                    with transaction.atomic(using=db):
                        cursor.execute(sql, params)
                else:
                    cursor.execute(sql, params)  # one statement: atomic by itself
            except DatabaseError:
                return False
        return True

"""The database cache, made to report the writes it cannot make.

Django's DatabaseCache swallows a failed `set` (it returns nothing either way), so a throttle on a full disk would
silently stop counting. This one raises CacheWriteError instead; core.throttling lets the request through and logs.
"""

from __future__ import annotations

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache


class CacheWriteError(Exception):
    pass


class DatabaseCache(DjangoDatabaseCache):
    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        key = self.make_and_validate_key(key, version=version)
        if not self._base_set("set", key, value, timeout):
            raise CacheWriteError("the database refused the cache write")

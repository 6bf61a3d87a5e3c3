"""Settings of a live server whose database writes fail while DISK_FULL_FLAG exists (tests/support_disk_full.py).

The cache is the database's, as in the default (SQLite) configuration, so the throttle meets the full disk too.
"""

from config.settings import *  # noqa: F403
from tests.support_disk_full import install

CACHES = {"default": {"BACKEND": "core.cache.DatabaseCache", "LOCATION": "service_cache"}}
install()

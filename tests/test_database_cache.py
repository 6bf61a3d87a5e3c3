"""The database cache's one-statement `set`: the same rows as Django's own, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connection, transaction

from accounts.models import Workspace
from core.cache import CacheWriteError, DatabaseCache

pytestmark = pytest.mark.django_db(transaction=True)
TABLE = "service_cache"


@pytest.fixture(autouse=True)
def empty_table():
    """The cache table is not a model's: transactional tests do not empty it."""
    DatabaseCache(TABLE, {}).clear()
    yield
    DatabaseCache(TABLE, {}).clear()


def cache(**options) -> DatabaseCache:
    return DatabaseCache(TABLE, {"OPTIONS": options})


def stored_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT cache_key, value, expires FROM {TABLE} ORDER BY cache_key")
        return cursor.fetchall()


def test_a_value_set_reads_back_and_a_second_set_replaces_value_and_expiry():
    ours = cache()
    ours.set("throttle", [1.5, 2.5], timeout=60)
    first_expiry = stored_rows()[0][2]
    ours.set("throttle", {"history": [3.0]}, timeout=3600)
    assert ours.get("throttle") == {"history": [3.0]}
    assert len(stored_rows()) == 1 and stored_rows()[0][2] != first_expiry


def test_rows_written_match_the_rows_djangos_own_set_writes():
    ours, django_cache = cache(), DjangoDatabaseCache(TABLE, {})
    for timeout in (60, None):
        ours.set("key", ["value", 1], timeout=timeout)
        ours_row = stored_rows()
        ours.clear()
        django_cache.set("key", ["value", 1], timeout=timeout)
        (key, value, expires), = stored_rows()
        assert [(key, value)] == [row[:2] for row in ours_row]
        assert abs((expires - ours_row[0][2]).total_seconds()) <= 1  # both are whole seconds from "now"
        django_cache.clear()


def test_an_expired_value_is_not_returned():
    ours = cache()
    ours.set("gone", "value", timeout=-1)
    assert ours.get("gone") is None


def test_a_full_table_is_culled_before_the_write_as_django_does():
    ours = cache(MAX_ENTRIES=4, CULL_FREQUENCY=2)
    for index in range(10):
        ours.set(f"key-{index}", index, timeout=60)
    assert len(stored_rows()) <= 5
    assert ours.get("key-9") == 9


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="SQLite does not enforce varchar lengths")
def test_a_refused_write_raises_and_leaves_the_callers_transaction_usable():
    ours = cache()
    with transaction.atomic():
        with pytest.warns(Warning), pytest.raises(CacheWriteError):
            ours.set("k" * 300, "value")  # longer than the cache_key column
        assert Workspace.objects.count() >= 0  # the transaction still answers


def test_replacing_a_key_is_one_statement_and_a_new_key_is_counted_first(django_assert_num_queries):
    ours = cache()
    with django_assert_num_queries(3) as new_key:  # UPDATE (nothing), COUNT, upsert
        ours.set("throttle", [1.0], timeout=60)
    assert "COUNT" in new_key.captured_queries[1]["sql"]
    with django_assert_num_queries(1):
        ours.set("throttle", [2.0, 1.0], timeout=60)
    assert ours.get("throttle") == [2.0, 1.0] and len(stored_rows()) == 1


def test_replacing_a_key_in_a_full_table_keeps_the_others():
    ours = cache(MAX_ENTRIES=2, CULL_FREQUENCY=1)
    for index in range(3):
        ours.set(f"key-{index}", index, timeout=60)
    kept = [row[0] for row in stored_rows()]
    assert len(kept) == 3  # one over MAX_ENTRIES: the next new key would cull first
    ours.set("key-0", "again", timeout=60)
    assert [row[0] for row in stored_rows()] == kept and ours.get("key-0") == "again"

"""TTLs of the store (store.ttl and put's `ttl`), as PostgresStore has them: an item expires `ttl` minutes after its
put, is invisible from then on, is moved on by a read with `refresh_ttl`, and is deleted by the periodic sweep.

Time passing is simulated by moving an item's `expires_at` into the past: no test sleeps. The same file runs in the
SQLite pass and in the PostgreSQL pass.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agentruntime import db_executor
from agentruntime.models import StoreItem, StoreVector
from agentruntime.store import config as store_config
from agentruntime.store import config_shape as store_schema
from agentruntime.store.django_store import DjangoStore
from agentruntime.store.expiry import store_sweep_expired
from core.registry import PERIODICS
from core.worker import Worker
from tests.agentruntime.store_embedding import DIMS, embed_texts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def store():
    yield DjangoStore(scope="test", ttl={"default_ttl": 10, "refresh_on_read": True})
    db_executor.close_connections()


@pytest.fixture
def restore_store_config():
    yield
    store_config.configure(None, base_dir=Path("."))


def expires_at(key: str):
    return StoreItem.objects.get(key=key).expires_at


def age(key: str, *, past_expiry: bool) -> None:
    """Move an item's expiry as if time had passed: just past it, or one minute before it."""
    now = timezone.now()
    StoreItem.objects.filter(key=key).update(
        expires_at=now - timedelta(seconds=1) if past_expiry else now + timedelta(minutes=1))


def test_a_put_expires_after_its_ttl_or_the_default_ttl(store):
    before = timezone.now()
    store.put(("ns",), "own", {"v": 1}, ttl=2)
    store.put(("ns",), "default", {"v": 2})
    store.put(("ns",), "forever", {"v": 3}, ttl=None)

    assert before + timedelta(minutes=2) <= expires_at("own") <= timezone.now() + timedelta(minutes=2)
    assert before + timedelta(minutes=10) <= expires_at("default") <= timezone.now() + timedelta(minutes=10)
    assert expires_at("forever") is None


def test_an_expired_item_is_invisible_at_once_to_every_read(store):
    store.put(("ns", "a"), "gone", {"v": 1})
    store.put(("ns", "b"), "kept", {"v": 2})
    age("gone", past_expiry=True)

    assert store.get(("ns", "a"), "gone") is None
    assert [item.key for item in store.search(("ns",))] == ["kept"]
    assert store.list_namespaces(prefix=("ns",)) == [("ns", "b")]
    assert StoreItem.objects.filter(key="gone").exists()  # until the sweep


def test_a_read_with_refresh_ttl_moves_the_expiry_on_and_one_without_does_not(store):
    store.put(("ns",), "item", {"v": 1}, ttl=5)
    age("item", past_expiry=False)
    aged = expires_at("item")

    store.get(("ns",), "item", refresh_ttl=False)
    store.search(("ns",), refresh_ttl=False)
    assert expires_at("item") == aged

    store.get(("ns",), "item")  # refresh_on_read: true
    assert expires_at("item") >= aged + timedelta(minutes=3)

    age("item", past_expiry=False)
    aged = expires_at("item")
    store.search(("ns",), refresh_ttl=True)
    assert expires_at("item") >= aged + timedelta(minutes=3)


def test_refresh_on_read_false_makes_reads_leave_the_expiry_alone():
    store = DjangoStore(scope="test", ttl={"default_ttl": 5, "refresh_on_read": False})
    store.put(("ns",), "item", {"v": 1})
    age("item", past_expiry=False)
    aged = expires_at("item")

    store.get(("ns",), "item")
    store.search(("ns",))

    assert expires_at("item") == aged


def test_a_put_over_an_item_renews_its_expiry(store):
    store.put(("ns",), "item", {"v": 1}, ttl=5)
    age("item", past_expiry=False)

    store.put(("ns",), "item", {"v": 2}, ttl=5)

    assert expires_at("item") >= timezone.now() + timedelta(minutes=4)


def test_the_sweep_deletes_expired_items_with_their_vectors_in_every_scope():
    indexed = DjangoStore(scope="one", index={"dims": DIMS, "embed": embed_texts, "fields": ["text"]})
    indexed.put(("ns",), "gone", {"text": "apple"}, ttl=1)
    indexed.put(("ns",), "kept", {"text": "pear"}, ttl=1)
    DjangoStore(scope="two").put(("ns",), "other", {"v": 1}, ttl=1)
    age("gone", past_expiry=True)
    age("other", past_expiry=True)

    assert store_sweep_expired() == 2

    assert list(StoreItem.objects.values_list("key", flat=True)) == ["kept"]
    assert StoreVector.objects.count() == 1


def test_the_periodic_job_sweeps_at_the_configured_interval(restore_store_config):
    store_config.configure({"ttl": {"default_ttl": 1, "sweep_interval_minutes": 5}}, base_dir=Path("."))
    assert PERIODICS[store_schema.SWEEP_JOB].every_seconds == 300
    store = store_config.store_for("test")
    store.put(("ns",), "gone", {"v": 1})
    age("gone", past_expiry=True)

    Worker(queues=["none"], run_periodic=True).run_due_periodics()

    assert not StoreItem.objects.exists()
    store_config.configure(None, base_dir=Path("."))
    assert PERIODICS[store_schema.SWEEP_JOB].every_seconds == store_schema.DEFAULT_SWEEP_SECONDS


def test_a_ttl_that_ends_past_the_calendar_keeps_the_item_without_an_expiry(store):
    store.put(("ns",), "ages", {"v": 1}, ttl=1e12)  # about two million years
    store.put(("ns",), "eons", {"v": 2}, ttl=4.7e307)

    assert expires_at("ages") is None and expires_at("eons") is None
    assert store.get(("ns",), "ages", refresh_ttl=True).value == {"v": 1}
    assert expires_at("ages") is None

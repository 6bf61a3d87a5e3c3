"""The sweep of threads whose TTL has run out (agentserver.jobs): `delete` removes the thread with its runs, events
and checkpoints; `keep_latest` keeps the thread and its latest checkpoint; threads not yet expired stay as they are.
An expired thread is never shown, even before the sweep; a served project's `checkpointer.ttl` is the default."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from langgraph.checkpoint.base import empty_checkpoint

from agentruntime import selectors as chat_selectors
from agentruntime import services as chat_services
from agentruntime import thread_ttl
from agentruntime.access import Caller
from agentruntime.models import ChatEvent, ChatRun, ChatThread
from agentruntime.served_graphs import get_checkpointer
from agentserver import selectors, services
from core.exceptions import NotFound
from core.registry import PERIODICS

pytestmark = pytest.mark.django_db(transaction=True)
ANONYMOUS = Caller(kind="anonymous")


def sweep() -> None:
    PERIODICS["agentserver.sweep_expired_threads"].func()


def make_thread(thread_id: str, *, strategy: str | None, expires_in: timedelta | None, checkpoints: int = 2):
    ttl = {"strategy": strategy, "ttl": 5.0} if strategy else None
    thread = ChatThread.objects.create(id=thread_id, owner_kind="anonymous", has_state=True, ttl=ttl,
                                       expires_at=timezone.now() + expires_in if expires_in is not None else None)
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for step in range(checkpoints):
        config = get_checkpointer().put(config, empty_checkpoint(), {"source": "update", "step": step}, {})
    run = ChatRun.objects.create(id=uuid.uuid4(), thread=thread, status=ChatRun.Status.COMPLETED)
    ChatEvent.objects.create(thread=thread, run=run, seq=1, channel="values", payload="{}")
    return thread


def checkpoints_of(thread_id: str) -> list:
    return list(get_checkpointer().list({"configurable": {"thread_id": thread_id}}))


def test_an_expired_thread_with_strategy_delete_is_gone_with_its_runs_events_and_checkpoints():
    make_thread("t-expired", strategy="delete", expires_in=-timedelta(seconds=1))

    sweep()

    assert not ChatThread.objects.filter(pk="t-expired").exists()
    assert not ChatRun.objects.filter(thread_id="t-expired").exists()
    assert not ChatEvent.objects.filter(thread_id="t-expired").exists()
    assert checkpoints_of("t-expired") == []


def test_threads_not_yet_expired_or_without_ttl_stay_whole():
    make_thread("t-later", strategy="delete", expires_in=timedelta(minutes=5))
    make_thread("t-forever", strategy=None, expires_in=None)

    sweep()

    for thread_id in ("t-later", "t-forever"):
        assert ChatThread.objects.filter(pk=thread_id).exists()
        assert ChatRun.objects.filter(thread_id=thread_id).count() == 1
        assert len(checkpoints_of(thread_id)) == 2


def test_keep_latest_keeps_the_thread_and_only_its_latest_checkpoint_and_restarts_the_clock():
    make_thread("t-prune", strategy="keep_latest", expires_in=-timedelta(seconds=1), checkpoints=3)
    latest = checkpoints_of("t-prune")[0].checkpoint["id"]

    sweep()

    thread = ChatThread.objects.get(pk="t-prune")
    assert [c.checkpoint["id"] for c in checkpoints_of("t-prune")] == [latest]
    assert thread.expires_at > timezone.now() + timedelta(minutes=4)
    assert ChatRun.objects.filter(thread=thread).count() == 1


def test_keep_latest_waits_for_an_active_run_to_end():
    thread = make_thread("t-busy", strategy="keep_latest", expires_in=-timedelta(seconds=1), checkpoints=3)
    ChatRun.objects.filter(thread=thread).update(status=ChatRun.Status.RUNNING)

    sweep()

    assert len(checkpoints_of("t-busy")) == 3


def test_an_expired_thread_is_not_read_listed_searched_or_counted_even_before_the_sweep():
    make_thread("t-gone", strategy="delete", expires_in=-timedelta(seconds=1))
    make_thread("t-pruned", strategy="keep_latest", expires_in=-timedelta(seconds=1))
    make_thread("t-live", strategy="delete", expires_in=timedelta(minutes=5))

    with pytest.raises(NotFound):
        selectors.thread_get(caller=ANONYMOUS, thread_id="t-gone")
    assert selectors.thread_get(caller=ANONYMOUS, thread_id="t-pruned").id == "t-pruned"
    found, total = selectors.thread_search(caller=ANONYMOUS, sort_by="thread_id", sort_order="asc")
    assert [thread.id for thread, _ in found] == ["t-live", "t-pruned"] and total == 2
    assert {t.id for t in chat_selectors.thread_list_for_caller(caller=ANONYMOUS)} == {"t-live", "t-pruned"}
    assert ChatThread.objects.filter(pk="t-gone").exists()  # the sweep has not run yet


def test_the_projects_default_ttl_is_given_to_threads_created_without_one(restore_ttl):
    thread_ttl.configure({"strategy": "keep_latest", "default_ttl": 30, "sweep_interval_minutes": 2})

    thread = services.thread_create(caller=ANONYMOUS)
    own = services.thread_create(caller=ANONYMOUS, ttl={"strategy": "delete", "ttl": 5})
    claimed = chat_services.thread_claim(thread_id="by-protocol", caller=ANONYMOUS)  # the examples' protocol

    assert thread.ttl == {"strategy": "keep_latest", "ttl": 30.0}
    assert timedelta(minutes=29) < thread.expires_at - timezone.now() <= timedelta(minutes=30)
    assert own.ttl == {"strategy": "delete", "ttl": 5}
    assert claimed.ttl == thread.ttl and claimed.expires_at is not None
    assert PERIODICS["agentserver.sweep_expired_threads"].every_seconds == 120


@pytest.mark.parametrize("raw", [{"strategy": "forget"}, {"default_ttl": -1}, {"default_ttl": "5"}, {"ttl": 5}, [1]])
def test_an_invalid_checkpointer_ttl_is_refused(raw, restore_ttl):
    with pytest.raises(ValueError, match="checkpointer.ttl"):
        thread_ttl.configure(raw)


@pytest.fixture
def restore_ttl():
    sweep = PERIODICS["agentserver.sweep_expired_threads"]
    yield
    thread_ttl.configure(None)
    PERIODICS[sweep.name] = sweep

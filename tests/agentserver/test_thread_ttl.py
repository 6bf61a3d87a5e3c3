"""The sweep of threads whose TTL has run out (agentserver.jobs): `delete` removes the thread with its runs, events
and checkpoints; `keep_latest` keeps the thread and its latest checkpoint; threads not yet expired stay as they are."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from langgraph.checkpoint.base import empty_checkpoint

from chat.graph_runtime import get_checkpointer
from chat.models import ChatEvent, ChatRun, ChatThread
from core.registry import PERIODICS

pytestmark = pytest.mark.django_db(transaction=True)


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

"""Firing crons (agentserver.crons.cron_fire), driven tick by tick with a controlled clock: one run per tick with
two workers racing for every tick, a missed stretch of ticks fires once, nothing after `end_time` or while
disabled, and what each run is made of."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agentruntime import services as chat_services
from agentruntime.access import Caller
from agentruntime.models import ChatRun, ChatThread
from agentserver import crons, services
from agentserver.graphs import served_graph_ids
from agentserver.models import Cron
from core.registry import PERIODICS

pytestmark = pytest.mark.django_db(transaction=True)
OWNER = Caller(kind="anonymous")


def make_cron(schedule: str = "*/5 * * * *", thread_id: str | None = None, **fields) -> Cron:
    """A cron as POST /runs/crons makes it (`body` as sent, `data` as validated)."""
    data = {"assistant_id": served_graph_ids()[0], "schedule": schedule, "input": {"messages": []}, **fields}
    body = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in data.items()}
    return crons.cron_create(caller=OWNER, thread_id=thread_id, body=body, data=data)


def runs_of(cron: Cron) -> list[ChatRun]:
    return [run for run in ChatRun.objects.order_by("created_at")
            if run.kwargs["config"]["configurable"].get("cron_id") == str(cron.pk)]


def race(cron_count: int, now) -> list[int]:
    """Two workers read the due crons, then both try to fire each of them: how many ticks each one fired."""
    barrier, fired = threading.Barrier(2), [0, 0]

    def worker(index: int) -> None:
        try:
            due = crons.crons_due(now=now)
            assert len(due) == cron_count
            barrier.wait(timeout=30)
            fired[index] = sum(crons.cron_fire(cron=cron, now=now) for cron in due)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return fired


def test_two_workers_racing_for_every_tick_create_one_run_per_tick():
    cron = make_cron()
    ticks = []
    for _ in range(4):
        cron.refresh_from_db()
        ticks.append(cron.next_run_date)
        fired = race(1, cron.next_run_date + timedelta(seconds=1))
        assert sorted(fired) == [0, 1]

    assert len(runs_of(cron)) == 4
    assert [b - a for a, b in zip(ticks, ticks[1:], strict=False)] == [timedelta(minutes=5)] * 3


def test_ticks_missed_while_no_worker_ran_fire_once_on_recovery():
    cron = make_cron()
    later = cron.next_run_date + timedelta(hours=3, seconds=30)

    assert crons.crons_fire_due(now=later) == 1
    assert crons.crons_fire_due(now=later) == 0
    cron.refresh_from_db()
    assert len(runs_of(cron)) == 1
    assert later < cron.next_run_date <= later + timedelta(minutes=5)


def test_no_run_is_created_after_the_end_time():
    start = make_cron().next_run_date
    cron = make_cron(end_time=start + timedelta(minutes=7))

    for minutes in (0, 5, 10, 15):
        crons.crons_fire_due(now=start + timedelta(minutes=minutes, seconds=1))

    assert len(runs_of(cron)) == 2


def test_a_disabled_cron_does_not_fire_until_enabled_again():
    cron = make_cron(enabled=False)
    due = cron.next_run_date + timedelta(seconds=1)

    assert crons.crons_fire_due(now=due) == 0
    crons.cron_update(cron=cron, body={"enabled": True}, data={"enabled": True})
    assert crons.crons_fire_due(now=due) == 1
    assert len(runs_of(cron)) == 1


def test_a_thread_cron_runs_on_its_thread_and_a_stateless_one_on_a_thread_of_its_own():
    ChatThread.objects.create(id="cron-thread", owner_kind="anonymous")
    on_thread = make_cron(thread_id="cron-thread", metadata={"from": "cron"})
    keep = make_cron(on_run_completed="keep")
    delete = make_cron()
    now = max(c.next_run_date for c in (on_thread, keep, delete)) + timedelta(seconds=1)

    assert crons.crons_fire_due(now=now) == 3

    run = runs_of(on_thread)[0]
    assert run.thread_id == "cron-thread" and run.metadata["from"] == "cron" and run.kind == "agent_server"
    assert run.status == ChatRun.Status.PENDING and run.kwargs["input"] == {"messages": []}
    assert runs_of(keep)[0].kwargs["temporary"] is False
    assert runs_of(delete)[0].kwargs["temporary"] is True
    assert runs_of(keep)[0].thread_id != runs_of(delete)[0].thread_id != "cron-thread"


def test_a_tick_whose_run_cannot_be_created_is_spent_and_logged(caplog):
    ChatThread.objects.create(id="gone-soon", owner_kind="anonymous")
    cron = make_cron(thread_id="gone-soon", multitask_strategy="reject")
    first = cron.next_run_date
    crons.crons_fire_due(now=first + timedelta(seconds=1))  # a pending run: the thread is busy for the next tick

    assert crons.crons_fire_due(now=first + timedelta(minutes=5, seconds=1)) == 1

    assert len(runs_of(cron)) == 1 and "its run could not be created" in caplog.text
    cron.refresh_from_db()
    assert cron.next_run_date == first + timedelta(minutes=10)


def test_the_periodic_job_fires_the_crons_that_are_due():
    cron = make_cron()
    Cron.objects.filter(pk=cron.pk).update(next_run_date=timezone.now() - timedelta(minutes=1))

    PERIODICS["agentserver.fire_due_crons"].func()

    assert len(runs_of(cron)) == 1
    cron.refresh_from_db()
    assert cron.next_run_date > timezone.now()


def test_a_threads_crons_go_with_it_whichever_way_it_is_deleted():
    for thread_id in ("by-api", "by-chat"):
        ChatThread.objects.create(id=thread_id, owner_kind="anonymous")
    by_api, by_chat = make_cron(thread_id="by-api"), make_cron(thread_id="by-chat")

    services.thread_delete(thread=ChatThread.objects.get(pk="by-api"))
    chat_services.thread_delete(thread=ChatThread.objects.get(pk="by-chat"))
    assert not Cron.objects.filter(pk=by_api.pk).exists()

    assert crons.crons_fire_due(now=by_chat.next_run_date + timedelta(seconds=1)) == 0
    assert not Cron.objects.filter(pk=by_chat.pk).exists() and ChatRun.objects.count() == 0


def test_the_admin_lists_crons_read_only(admin_client):
    cron = make_cron(schedule="0 7 * * *")

    listed = admin_client.get("/admin/agentserver/cron/")
    shown = admin_client.get(f"/admin/agentserver/cron/{cron.pk}/change/")

    assert listed.status_code == 200 and "0 7 * * *" in listed.content.decode()
    assert shown.status_code == 200 and 'name="schedule"' not in shown.content.decode()

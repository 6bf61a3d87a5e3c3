"""A thread's status and values (agentserver.selectors.thread_view) are read so that they agree: a run that ends
while the thread is being read leaves it "busy" for that read, never "idle" beside the values of a step."""

from __future__ import annotations

import uuid

import pytest

from agentruntime.models import ChatRun, ChatThread
from agentserver import selectors

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_ending_while_the_threads_state_is_read_leaves_that_read_busy(monkeypatch):
    thread = ChatThread.objects.create(id="t-racing", owner_kind="anonymous", has_state=True)
    run = ChatRun.objects.create(id=uuid.uuid4(), thread=thread, status=ChatRun.Status.RUNNING)
    read_state = selectors.snapshot_get

    def state_read_while_the_run_ends(graph, thread_id):
        snapshot = read_state(graph, thread_id)
        ChatRun.objects.filter(pk=run.pk).update(status=ChatRun.Status.COMPLETED)
        return snapshot

    monkeypatch.setattr(selectors, "snapshot_get", state_read_while_the_run_ends)
    assert selectors.thread_view(thread)["status"] == "busy"
    monkeypatch.setattr(selectors, "snapshot_get", read_state)
    assert selectors.thread_view(thread)["status"] == "idle"

"""A database made while the runtime's models were the chat app's upgrades to the agent runtime with nothing lost.

The test takes the database back to chat's migration 0011, the last before the move, so that Django sees it as an
older service left it; writes threads, runs, events, checkpoints, interrupts and store items there through the
models of that time; migrates forward; and reads every row back, through the runtime's own code where it has some
(the checkpointer, the store, the event log's selector). The same runs on SQLite and, in CI's second pass,
PostgreSQL.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, TypedDict

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from langgraph.graph import START, StateGraph

from accounts.services import workspace_create

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_THE_MOVE = [("chat", "0011_run_kind_choices"), ("agentruntime", None)]
TABLES = ("chat_chatthread", "chat_chatrun", "chat_chatevent", "chat_chatinterrupt", "chat_checkpoint",
          "chat_checkpointblob", "chat_checkpointwrite", "chat_storeitem", "chat_storevector")


class Turns(TypedDict):
    turns: Annotated[int, operator.add]


def migrate(targets=None) -> None:
    """Migrate to `targets` (None: every app's latest)."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


def apps_before_the_move():
    """The models as chat's migration 0011 left them."""
    return MigrationExecutor(connection).loader.project_state(BEFORE_THE_MOVE[0]).apps


def table_rows() -> dict[str, list[tuple]]:
    with connection.cursor() as cursor:
        rows = {}
        for table in TABLES:
            cursor.execute(f"SELECT * FROM {table} ORDER BY 1")  # noqa: S608 - the names above
            rows[table] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                           for row in cursor.fetchall()]
        return rows


def fill_at_the_old_layout(old_apps, workspace_id) -> dict:
    """What an older service stored: a thread with a finished run, its events, an interrupt, a store item with its
    vector, all through the chat app's models of migration 0011."""
    thread_model = old_apps.get_model("chat", "ChatThread")
    run_model = old_apps.get_model("chat", "ChatRun")
    thread = thread_model.objects.create(id="thread-from-before", owner_kind="workspace", workspace_id=workspace_id,
                                         title="Kept", graph_name="agent", has_state=True, last_seq=2,
                                         metadata={"from": "before"})
    run = run_model.objects.create(id=uuid.uuid4(), thread=thread, status="completed", kind="agent_server",
                                   kwargs={"input": {"turns": 1}}, finished_at=timezone.now())
    event_model = old_apps.get_model("chat", "ChatEvent")
    for seq, event in ((1, "running"), (2, "completed")):
        event_model.objects.create(thread=thread, run=run, seq=seq, channel="lifecycle",
                                   payload=f'{{"type":"event","seq":{seq},"event_id":"{seq}","method":"lifecycle",'
                                           f'"params":{{"namespace":[],"data":{{"event":"{event}"}}}}}}')
    old_apps.get_model("chat", "ChatInterrupt").objects.create(thread=thread, run=run, interrupt_id="ask-1",
                                                               response={"type": "approve"})
    now = timezone.now()
    item = old_apps.get_model("chat", "StoreItem").objects.create(
        scope=f"workspace:{workspace_id}", namespace="memories", key="favourite", value={"colour": "green"},
        created_at=now, updated_at=now)
    old_apps.get_model("chat", "StoreVector").objects.create(item=item, field="$", vector=b"\x00\x00\x80?")
    return {"thread": thread.id, "run": run.id}


def test_a_database_of_the_chat_apps_layout_upgrades_with_every_row_kept():
    workspace = workspace_create(name="upgrading")
    # A checkpoint as a graph of the old service wrote it: the saver's code and tables did not change.
    from agentruntime.checkpointer.saver import DjangoCheckpointSaver

    graph = (StateGraph(Turns).add_node("count", lambda state: {"turns": 1}).add_edge(START, "count")
             .compile(checkpointer=DjangoCheckpointSaver()))
    config = {"configurable": {"thread_id": "thread-from-before"}}
    graph.invoke({"turns": 1}, config)
    run_type = ContentType.objects.get(app_label="agentruntime", model="chatrun")

    migrate(BEFORE_THE_MOVE)
    old_apps = apps_before_the_move()
    assert ContentType.objects.get(pk=run_type.pk).app_label == "chat"  # as the older service had it
    made = fill_at_the_old_layout(old_apps, workspace.id)
    before = table_rows()
    assert all(before[table] for table in TABLES)

    migrate()

    assert table_rows() == before
    assert ContentType.objects.get(pk=run_type.pk).app_label == "agentruntime"
    from agentruntime.models import ChatEvent, ChatInterrupt, ChatRun, ChatThread
    from agentruntime.selectors import events_after
    from agentruntime.store.django_store import DjangoStore

    thread = ChatThread.objects.get(pk=made["thread"])
    assert (thread.title, thread.workspace_id, thread.metadata) == ("Kept", workspace.id, {"from": "before"})
    assert ChatRun.objects.get(pk=made["run"]).kwargs == {"input": {"turns": 1}}
    assert [event.seq for event in events_after(thread_id=thread.id, after_seq=0)] == [1, 2]
    assert ChatInterrupt.objects.get(thread=thread).response == {"type": "approve"}
    assert ChatEvent.objects.filter(run_id=made["run"]).count() == 2
    stored = DjangoStore(scope=f"workspace:{workspace.id}").get(("memories",), "favourite")
    assert stored is not None and stored.value == {"colour": "green"}
    # The thread's state reads back, and a new step continues it.
    assert graph.get_state(config).values == {"turns": 2}
    graph.invoke({"turns": 1}, config)
    assert graph.get_state(config).values == {"turns": 4}

"""A run's graph gets its thread owner's store (the `store` argument, get_store(), runtime.store): what it keeps
there is visible to the owner's later runs and to the owner's /store routes, never to another owner."""

from __future__ import annotations

import pytest

from tests.agentserver.support_sdk import SdkClient
from tests.chat.support_chat import live_chat_server, new_thread, start_run
from tests.support_processes import wait_for

pytestmark = pytest.mark.live
server = live_chat_server(CHAT_GRAPH="tests/chat/graphs.py:memory_graph", CHAT_ALLOW_ANONYMOUS="false")


@pytest.fixture
def keys(server, transactional_db, make_client, workspace, other_workspace):
    return (make_client(workspace, permissions=["chat:use"]).raw_key,
            make_client(other_workspace, permissions=["chat:use"]).raw_key)


@pytest.fixture
def clients(server, keys):
    made = [SdkClient("sync", f"{server.url}/api", api_key=key) for key in keys]
    yield made
    for client in made:
        client.close()


def test_what_a_run_remembers_a_later_thread_of_the_same_owner_recalls_and_no_other_owner_sees(clients):
    mine, theirs = clients
    first = mine.threads.create()["thread_id"]
    assert mine.runs.wait(first, "agent", input={"remember": "seven"}) == {
        "remember": "seven", "recalled": ["seven"], "same_store": True}

    later = mine.runs.wait(mine.threads.create()["thread_id"], "agent", input={"remember": "blue"})
    stateless = mine.runs.wait(None, "agent", input={})
    other = theirs.runs.wait(theirs.threads.create()["thread_id"], "agent", input={})

    assert later["recalled"] == ["blue", "seven"]
    assert stateless["recalled"] == ["blue", "seven"]
    assert other["recalled"] == []
    assert mine.store.get_item(["memories"], "seven")["value"] == {"text": "seven"}
    assert theirs.store.get_item(["memories"], "seven") is None


def test_a_run_started_over_the_chat_protocol_gets_its_owners_store_too(server, clients, keys):
    mine, _ = clients
    mine.store.put_item(["memories"], "stated", {"text": "stated"})
    thread = new_thread()

    start_run(server.url, thread, headers={"X-Api-Key": keys[0]}, input={"remember": "protocol"})

    # Until the run has ended, so that nothing of it is still writing when the test's data is flushed.
    wait_for(lambda: mine.threads.get(thread)["status"] == "idle", timeout=60)
    recalled = mine.threads.get_state(thread)["values"]["recalled"]

    assert recalled == ["protocol", "stated"]
    assert mine.store.get_item(["memories"], "protocol")["value"] == {"text": "protocol"}

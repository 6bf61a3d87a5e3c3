"""Crons through the Python SDK (`client.crons`), shared by the tests against the service's /api, a served
project and a deployed revision: every route (GET /runs/crons/{id}, which the SDKs do not call, over HTTP)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx

from agentserver.selectors import system_assistant_id
from tests.agentserver.support_sdk import SdkClient, status_of
from tests.support_processes import wait_for

CRON_KEYS = {"cron_id", "assistant_id", "thread_id", "user_id", "end_time", "schedule", "timezone", "payload",
             "next_run_date", "metadata", "on_run_completed", "enabled", "created_at", "updated_at"}
END = datetime(2100, 1, 1, tzinfo=UTC)


def cron_lifecycle(client: SdkClient, graph: str, base: str, headers: dict) -> None:
    """Create (stateless and on a thread), read, search, count, update and delete, with the errors of each."""
    marker = uuid.uuid4().hex
    thread = client.threads.create()["thread_id"]
    stateless = client.crons.create(graph, schedule="*/5 * * * *", input={"messages": []},
                                    metadata={"team": marker}, on_run_completed="keep")
    assert set(stateless) == CRON_KEYS and stateless["thread_id"] is None
    assert stateless["assistant_id"] == str(system_assistant_id(graph)) and stateless["on_run_completed"] == "keep"
    assert stateless["enabled"] is True and stateless["end_time"] is None and stateless["timezone"] is None
    assert stateless["payload"]["config"] == {"configurable": {"cron_id": stateless["cron_id"]}}
    assert stateless["payload"]["input"] == {"messages": []}
    first = datetime.fromisoformat(stateless["next_run_date"])
    assert first > datetime.now(UTC) and first.minute % 5 == 0 and first.second == 0

    on_thread = client.crons.create_for_thread(thread, graph, schedule="0 9 * * 1", end_time=END, enabled=False,
                                               metadata={"team": marker, "kind": "thread"}, timezone="Europe/Paris")
    assert on_thread["thread_id"] == thread and on_thread["on_run_completed"] is None
    assert on_thread["enabled"] is False and datetime.fromisoformat(on_thread["end_time"]) == END
    # 09:00 in Paris is 08:00 UTC in winter, 07:00 in summer.
    assert datetime.fromisoformat(on_thread["next_run_date"]).hour in (7, 8)
    ids = {stateless["cron_id"], on_thread["cron_id"]}

    with httpx.Client(base_url=base, headers=headers, timeout=30, trust_env=False) as http:
        assert http.get(f"/runs/crons/{on_thread['cron_id']}").json() == on_thread
        assert http.get(f"/runs/crons/{uuid.uuid4()}").status_code == 404
        assert http.get("/runs/crons/not-a-uuid").status_code == 422

    _search_and_count(client, marker, thread, stateless, on_thread)
    _update(client, on_thread)
    _refusals(client, graph)

    for cron_id in ids:
        client.crons.delete(cron_id)
    assert client.crons.count(metadata={"team": marker}) == 0
    assert status_of(lambda: client.crons.delete(stateless["cron_id"]))[0] == 404


def _search_and_count(client: SdkClient, marker: str, thread: str, stateless: dict, on_thread: dict) -> None:
    mine = {"team": marker}
    found = client.crons.search(metadata=mine, sort_by="created_at", sort_order="asc")
    assert [c["cron_id"] for c in found] == [stateless["cron_id"], on_thread["cron_id"]]
    assert [c["cron_id"] for c in client.crons.search(metadata=mine, limit=1, offset=1)] == [stateless["cron_id"]]
    assert [c["cron_id"] for c in client.crons.search(thread_id=thread)] == [on_thread["cron_id"]]
    assert [c["cron_id"] for c in client.crons.search(metadata=mine, enabled=False)] == [on_thread["cron_id"]]
    selected = client.crons.search(metadata={**mine, "kind": "thread"}, select=["cron_id", "schedule"])
    assert selected == [{"cron_id": on_thread["cron_id"], "schedule": "0 9 * * 1"}]
    by_next = client.crons.search(metadata=mine, sort_by="next_run_date", sort_order="desc")
    assert [c["cron_id"] for c in by_next] == [c["cron_id"] for c in sorted(
        (stateless, on_thread), key=lambda c: c["next_run_date"], reverse=True)]
    assert client.crons.count(metadata=mine) == 2 and client.crons.count(thread_id=thread) == 1
    assert client.crons.count(assistant_id=stateless["assistant_id"], metadata=mine) == 2


def _update(client: SdkClient, on_thread: dict) -> None:
    cron_id = on_thread["cron_id"]
    updated = client.crons.update(cron_id, schedule="30 6 * * *", timezone="UTC", enabled=True,
                                  metadata={"stage": "two"}, input={"messages": [{"role": "user", "content": "hi"}]})
    assert updated["schedule"] == "30 6 * * *" and updated["enabled"] is True
    assert updated["metadata"]["stage"] == "two" and updated["metadata"]["kind"] == "thread"
    following = datetime.fromisoformat(updated["next_run_date"])
    assert (following.hour, following.minute) == (6, 30)
    assert updated["payload"]["input"]["messages"][0]["content"] == "hi"
    assert updated["payload"]["config"]["configurable"]["cron_id"] == cron_id
    assert datetime.fromisoformat(updated["updated_at"]) > datetime.fromisoformat(on_thread["updated_at"])
    # An explicit null clears the end time; leaving it out keeps it.
    assert client.crons.update(cron_id, enabled=False)["end_time"] is not None
    assert client.crons.update(cron_id, end_time=None)["end_time"] is None
    assert status_of(lambda: client.crons.update(cron_id, schedule="every day"))[0] == 422
    assert status_of(lambda: client.crons.update(str(uuid.uuid4()), enabled=True))[0] == 404


def _refusals(client: SdkClient, graph: str) -> None:
    status, body = status_of(lambda: client.crons.create(graph, schedule="61 * * * *"))
    assert status == 422 and "Invalid cron schedule" in body["detail"]
    status, body = status_of(lambda: client.crons.create(graph, schedule="0 0 30 2 *"))  # the 30th of February
    assert status == 422 and "never fires" in body["detail"]
    assert status_of(lambda: client.crons.create(graph, schedule="* * * * *", timezone="Mars/Base"))[0] == 422
    assert status_of(lambda: client.crons.create(str(uuid.uuid4()), schedule="* * * * *"))[0] == 404
    assert status_of(lambda: client.crons.create_for_thread(str(uuid.uuid4()), graph, schedule="* * * * *"))[0] == 404
    assert status_of(lambda: client.crons.search(sort_by="bogus"))[0] == 422


def cron_fires_on_its_thread(client: SdkClient, graph: str, text: str) -> list[dict]:
    """A cron of every second on a thread, left until it fired twice: the runs it made (the thread's, newest first).

    Needs a server that fires crons (a serving process runs the periodic jobs).
    """
    thread = client.threads.create()["thread_id"]
    cron = client.crons.create_for_thread(thread, graph, schedule="* * * * * *",
                                          input={"messages": [{"role": "user", "content": text}]},
                                          metadata={"via": "cron"})
    try:
        runs = wait_for(lambda: (found := client.runs.list(thread)) and len(found) >= 2 and found, timeout=90)
    finally:
        client.crons.delete(cron["cron_id"])
    for run in runs:
        assert run["metadata"]["via"] == "cron" and run["kwargs"]["config"]["configurable"]["cron_id"] == \
            cron["cron_id"]
    return runs

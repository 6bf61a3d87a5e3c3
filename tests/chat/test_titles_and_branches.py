"""Thread titles (automatic, renamed) and branches (edits and regenerations fork the checkpoint history)."""

from __future__ import annotations

import httpx
import pytest

from agentruntime.models import ChatThread
from agentruntime.services import TITLE_LENGTH, shorten_title
from tests.chat.support_chat import (
    ALL_CHANNELS,
    command,
    live_chat_server,
    new_thread,
    replay,
    run_to_end,
    start_run,
    wait_for_run_end,
)

pytestmark = pytest.mark.live
chat_server = live_chat_server()


def listed_title(base: str, thread: str) -> str:
    return next(t["title"] for t in httpx.get(f"{base}/api/threads").json() if t["id"] == thread)


def human_texts(state: dict) -> list[str]:
    return [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]


@pytest.mark.parametrize(("text", "title"), [
    ("calculate 2 + 2", "calculate 2 + 2"),
    ("  Research   the history\nof the abacus ", "Research the history of the abacus"),
    ("Research the history of the abacus and separately calculate 42 * 17 please",
     "Research the history of the abacus and…"),
    ("x" * 60, "x" * (TITLE_LENGTH - 1) + "…"),
])
def test_automatic_titles_are_shortened_on_a_word_boundary(text, title):
    assert shorten_title(text) == title
    assert len(shorten_title(text)) <= TITLE_LENGTH


def test_a_thread_is_titled_after_its_first_message_when_its_first_run_starts(base):
    thread = new_thread()
    run_to_end(base, thread, "Research the history of the abacus, and separately calculate 42 * 17.")
    assert listed_title(base, thread) == "Research the history of the abacus, and…"
    run_to_end(base, thread, "calculate 1 + 1")
    assert listed_title(base, thread) == "Research the history of the abacus, and…"


def test_a_thread_is_renamed_with_patch_and_keeps_its_place_in_the_list(base):
    older, thread = new_thread(), new_thread()
    run_to_end(base, thread, "calculate 2 + 3")
    run_to_end(base, older, "calculate 4 + 5")
    response = httpx.patch(f"{base}/api/threads/{thread}", json={"title": "  Sums   for the\nreport "})
    # The Agent Server's threads.update answers: its thread object (which has no title).
    assert response.status_code == 200 and response.json()["thread_id"] == thread
    listed = httpx.get(f"{base}/api/threads").json()
    assert [t["id"] for t in listed][:2] == [older, thread]
    assert listed[1]["title"] == "Sums for the report"
    assert ChatThread.objects.get(pk=thread).title == "Sums for the report"


def test_a_rename_can_go_with_the_agent_servers_metadata_update(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 2 + 8")
    response = httpx.patch(f"{base}/api/threads/{thread}", json={"title": "Tens", "metadata": {"topic": "sums"}})
    assert response.status_code == 200 and response.json()["metadata"]["topic"] == "sums"
    assert listed_title(base, thread) == "Tens"


@pytest.mark.parametrize(("body", "message"), [
    ({"title": ""}, "title must not be blank."),
    ({"title": " \n "}, "title must not be blank."),
    ({"title": 12}, "title must be a string."),
    ({"title": "t" * 201}, "title must be at most 200 characters long (it has 201)."),
    ({"title": "", "metadata": {"topic": "lost"}}, "title must not be blank."),
])
def test_a_bad_title_is_422_in_the_agent_servers_shape_and_changes_nothing(base, body, message):
    thread = new_thread()
    run_to_end(base, thread, "calculate 6 + 7")
    response = httpx.patch(f"{base}/api/threads/{thread}", json=body)
    assert response.status_code == 422
    assert response.json() == {"detail": message}
    assert listed_title(base, thread) == "calculate 6 + 7"
    assert "topic" not in ChatThread.objects.get(pk=thread).metadata


def test_a_null_title_or_a_body_that_is_not_an_object_is_422(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 6 + 8")
    for body in ({"title": None}, ["title"]):
        response = httpx.patch(f"{base}/api/threads/{thread}", json=body)
        assert response.status_code == 422 and isinstance(response.json()["detail"], str), body
    assert listed_title(base, thread) == "calculate 6 + 8"


def test_threads_are_searched_by_title_in_any_case(base):
    abacus, owls = new_thread(), new_thread()
    run_to_end(base, abacus, "Research the history of the abacus")
    run_to_end(base, owls, "Research owls")
    httpx.patch(f"{base}/api/threads/{owls}", json={"title": "Night birds"})
    found = httpx.get(f"{base}/api/threads", params={"q": "ABACUS"}).json()
    assert [t["id"] for t in found] == [abacus]
    assert [t["id"] for t in httpx.get(f"{base}/api/threads", params={"q": "birds"}).json()] == [owls]
    assert httpx.get(f"{base}/api/threads", params={"q": "owls"}).json() == []
    assert len(httpx.get(f"{base}/api/threads", params={"q": "  "}).json()) >= 2


def test_renaming_needs_json_and_an_existing_thread(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 9")
    response = httpx.patch(f"{base}/api/threads/{thread}", content=b"{not json",
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and response.json() == {"detail": "Invalid JSON in request body"}
    missing = new_thread()
    response = httpx.patch(f"{base}/api/threads/{missing}", json={"title": "x"})
    assert response.status_code == 404
    assert response.json() == {"detail": f"Thread with ID {missing} not found"}
    assert not ChatThread.objects.filter(pk=missing).exists()
    assert httpx.put(f"{base}/api/threads/{thread}", json={"title": "x"}).status_code == 405


def branches(base: str, thread: str, head: str | None = None) -> dict:
    response = httpx.get(f"{base}/api/threads/{thread}/branches", params={"checkpoint_id": head} if head else {})
    assert response.status_code == 200, response.text
    return response.json()


def state(base: str, thread: str) -> dict:
    return httpx.get(f"{base}/api/threads/{thread}/state").json()


def test_edits_and_regenerations_fork_the_thread_and_each_branch_can_be_reopened(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 1")
    run_to_end(base, thread, "calculate 2 + 2")
    linear = branches(base, thread)
    assert linear["forks"] == [] and linear["checkpoint_id"] == linear["latest"]
    assert [m["type"] for m in linear["messages"]] == ["human", "ai", "tool", "ai"] * 2
    second_human = linear["messages"][4]

    # Edit the second message: a run from the checkpoint before it, with the new text.
    start_run(base, thread, "calculate 3 + 3", config={"configurable": {"checkpoint_id": second_human["edit_from"]}})
    wait_for_run_end(base, thread)
    assert human_texts(state(base, thread)) == ["calculate 1 + 1", "calculate 3 + 3"]
    edited = branches(base, thread)
    [fork] = edited["forks"]
    assert fork["message_index"] == 4 and fork["current"] == 1 and len(fork["heads"]) == 2
    assert fork["heads"][1] == edited["latest"]

    # Regenerate the last answer: the same turn again, from where its user message first appears.
    answer = edited["messages"][5]
    assert answer["type"] == "ai"
    command(base, thread, "run.start", {"input": None, "config": {"configurable": {
        "checkpoint_id": answer["regenerate_from"]}}})
    wait_for_run_end(base, thread)
    regenerated = branches(base, thread)
    assert [f["message_index"] for f in regenerated["forks"]] == [4, 5]
    assert regenerated["forks"][1]["current"] == 1 and len(regenerated["forks"][1]["heads"]) == 2
    now = state(base, thread)
    assert human_texts(now) == ["calculate 1 + 1", "calculate 3 + 3"]
    assert "3 + 3 = 6" in str(now["values"]["messages"][-1]["content"])
    # The regenerated answer's tool calls are new: the client keys subagent cards by their ids.
    calls = [c["id"] for m in now["values"]["messages"] if m["type"] == "ai" for c in m.get("tool_calls", [])]
    before = [c["id"] for m in state_at(base, thread, fork["heads"][1]) if m["type"] == "ai"
              for c in m.get("tool_calls", [])]
    assert set(calls).isdisjoint(before[1:])

    # The first branch is still there: its head shows the original second message, with the fork as "1 of 2".
    original = branches(base, thread, regenerated["forks"][0]["heads"][0])
    assert original["forks"][0]["current"] == 0 and len(original["forks"]) == 1
    assert [m["type"] for m in original["messages"]] == ["human", "ai", "tool", "ai"] * 2
    texts = [m["content"] for m in state_at(base, thread, original["checkpoint_id"]) if m["type"] == "human"]
    assert texts == ["calculate 1 + 1", "calculate 2 + 2"]

    # Editing the same message again adds a third sibling at the same place.
    start_run(base, thread, "calculate 4 + 4", config={"configurable": {"checkpoint_id": second_human["edit_from"]}})
    wait_for_run_end(base, thread)
    third = branches(base, thread)
    assert third["forks"][0]["message_index"] == 4 and third["forks"][0]["current"] == 2
    assert len(third["forks"][0]["heads"]) == 3


def state_at(base: str, thread: str, checkpoint_id: str) -> list[dict]:
    [found] = httpx.post(f"{base}/api/threads/{thread}/history",
                         json={"limit": 1, "checkpoint": {"checkpoint_id": checkpoint_id}}).json()
    return found["values"]["messages"]


def test_editing_the_first_message_forks_from_the_threads_first_checkpoint(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 2")
    first = branches(base, thread)["messages"][0]
    start_run(base, thread, "calculate 2 + 3", config={"configurable": {"checkpoint_id": first["edit_from"]}})
    wait_for_run_end(base, thread)
    after = branches(base, thread)
    assert [(f["message_index"], f["current"], len(f["heads"])) for f in after["forks"]] == [(0, 1, 2)]
    assert human_texts(state(base, thread)) == ["calculate 2 + 3"]


def test_a_replay_leaves_out_the_runs_of_branches_the_thread_left(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 1")
    run_to_end(base, thread, "calculate 2 + 2")
    edit_from = branches(base, thread)["messages"][4]["edit_from"]
    start_run(base, thread, "calculate 5 + 5", config={"configurable": {"checkpoint_id": edit_from}})
    wait_for_run_end(base, thread)
    assert replayed_humans_and_runs(base, thread) == ({"calculate 1 + 1", "calculate 5 + 5"}, 2)

    # A regeneration forks in the middle of the edit's run: that run's old answer is not replayed either.
    answer = branches(base, thread)["messages"][5]
    command(base, thread, "run.start", {"input": None, "config": {"configurable": {
        "checkpoint_id": answer["regenerate_from"]}}})
    wait_for_run_end(base, thread)
    assert replayed_humans_and_runs(base, thread) == ({"calculate 1 + 1", "calculate 5 + 5"}, 2)
    answers = [e for e in replay(base, thread, {"channels": ["values"], "namespaces": [[]], "depth": 0})]
    final = answers[-1]["params"]["data"]["messages"]
    assert len(final) == 8 and all(len(e["params"]["data"]["messages"]) <= 8 for e in answers)


def replayed_humans_and_runs(base: str, thread: str) -> tuple[set, int]:
    events = replay(base, thread, {"channels": ALL_CHANNELS})
    humans = {m["content"] for e in events if e["method"] == "values" and e["params"]["namespace"] == []
              for m in e["params"]["data"].get("messages", []) if m["type"] == "human"}
    starts = [e for e in events if e["method"] == "lifecycle" and e["params"]["namespace"] == []
              and e["params"]["data"]["event"] == "running"]
    return humans, len(starts)


def test_branches_of_an_unknown_checkpoint_or_thread_are_404(base):
    thread = new_thread()
    run_to_end(base, thread, "calculate 1 + 3")
    response = httpx.get(f"{base}/api/threads/{thread}/branches", params={"checkpoint_id": "nope"})
    assert response.status_code == 404 and response.json()["error"] == "no_such_checkpoint"
    response = httpx.get(f"{base}/api/threads/{new_thread()}/branches")
    assert response.status_code == 404 and response.json()["error"] == "not_found"

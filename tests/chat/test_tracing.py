"""Every chat run records its run tree in the trace store: the key's workspace, or CHAT_WORKSPACE for others."""

from __future__ import annotations

import time
import uuid

import pytest

from accounts.models import Workspace
from tests.chat.support_chat import live_chat_server, run_to_end
from tracing.models import Run

pytestmark = pytest.mark.live
chat_server = live_chat_server(CHAT_WORKSPACE="chat-traces", CHAT_TRACING_PROJECT="chat-runs")


def trace_of(run_id: str, *, expected: int, timeout: float = 120) -> list[Run]:
    """The stored runs of one trace, waiting for the server's background writer to deliver them: at least
    `expected`, every one ended, the root among them (the writer's batches may bring it last; seen once in CI)."""
    deadline = time.monotonic() + timeout
    while True:
        runs = list(Run.objects.filter(trace_id=run_id).select_related("session", "workspace"))
        complete = len(runs) >= expected and all(r.end_time for r in runs) and any(str(r.id) == run_id for r in runs)
        if complete or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def chat_run_id(thread: str) -> str:
    from agentruntime.models import ChatRun

    return str(ChatRun.objects.filter(thread_id=thread).latest("created_at").id)


def test_an_agent_run_is_traced_as_one_tree_in_the_owners_workspace(chat_server, transactional_db, make_client,
                                                                    workspace):
    headers = {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key}
    thread = str(uuid.uuid4())
    run_to_end(chat_server.url, thread, headers=headers)
    run_id = chat_run_id(thread)
    runs = trace_of(run_id, expected=20)
    root = [r for r in runs if r.parent_run_id is None]
    assert len(root) == 1 and str(root[0].id) == run_id
    assert {(r.workspace_id, r.session.name) for r in runs} == {(workspace.id, "chat-runs")}
    by_id = {r.id: r for r in runs}
    assert all(r.parent_run_id in by_id for r in runs if r.parent_run_id)
    names = {r.name for r in runs}
    assert {"search_web", "calculator", "task"} <= names
    llm_calls = [r for r in runs if r.run_type == "llm"]
    assert len(llm_calls) == 6 and all(r.total_tokens for r in llm_calls)


def test_anonymous_runs_are_traced_in_the_chat_workspace(chat_server, transactional_db):
    thread = str(uuid.uuid4())
    run_to_end(chat_server.url, thread, "calculate 3 * 3")
    runs = trace_of(chat_run_id(thread), expected=10)
    assert runs and {r.workspace.name for r in runs} == {"chat-traces"}
    assert Workspace.objects.filter(name="chat-traces").exists()

"""Several graphs served by one process (as `serve_graphs` does for a langgraph.json): `run.start`'s `assistant_id`
picks one by name, and each thread keeps reading its state through the graph it ran. In process, through the ASGI
application; runs execute on the test's event loop."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
from asgiref.testing import ApplicationCommunicator

from agentruntime import db_executor, served_graphs
from agentruntime.models import ChatRun, ChatThread

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")]
GRAPHS = {"first": "tests/chat/graphs.py:first_graph", "second": "tests/chat/graphs.py:second_graph"}


@pytest.fixture(autouse=True)
def two_graphs(settings):
    settings.CHAT_ALLOW_ANONYMOUS = True
    settings.CHAT_TRACING_PROJECT = ""
    served_graphs.configure_graphs(GRAPHS)
    yield
    served_graphs.configure(None)
    # The pool's connections would keep the test database from being dropped at the end of the session.
    db_executor.close_connections()


async def call(method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    from config.asgi import application

    scope = {"type": "http", "http_version": "1.1", "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode(), "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000),
             "server": ("testserver", 80),
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")]}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode() if body else b""})
    start = await communicator.receive_output(10)
    chunks = []
    while True:
        message = await communicator.receive_output(10)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    await communicator.wait(10)
    payload = b"".join(chunks)
    return start["status"], json.loads(payload) if payload else None


async def command(thread: str, method: str, params: dict) -> dict:
    status, envelope = await call("POST", f"/api/threads/{thread}/commands", {"id": 1, "method": method,
                                                                             "params": params})
    assert status == 200
    return envelope


async def run(thread: str, assistant_id: str | None) -> None:
    """Start a run with `assistant_id` (left out when None) and wait for it to end."""
    params = {"input": {"messages": [{"type": "human", "content": "hello"}]}}
    if assistant_id is not None:
        params["assistant_id"] = assistant_id
    envelope = await command(thread, "run.start", params)
    assert envelope["type"] == "success", envelope
    run_id = envelope["result"]["run_id"]
    deadline = time.monotonic() + 20
    while (status := await db_executor.run(lambda: ChatRun.objects.get(pk=run_id).status)) == ChatRun.Status.RUNNING:
        assert time.monotonic() < deadline, "the run did not end"
        await asyncio.sleep(0.05)
    assert status == ChatRun.Status.COMPLETED


async def served_by(thread: str) -> str:
    """Which graph answered, read through every state route (each must use the thread's own graph)."""
    status, state = await call("GET", f"/api/threads/{thread}/state")
    assert status == 200
    _, history = await call("POST", f"/api/threads/{thread}/history", {"limit": 1})
    got = (await command(thread, "state.get", {}))["result"]["values"]
    keys = [{"first", "second"} & set(values) for values in (state["values"], history[0]["values"], got)]
    assert all(k == keys[0] and len(k) == 1 for k in keys), keys
    return keys[0].pop()


@pytest.mark.parametrize(("assistant_id", "graph"), [
    ("first", "first"), ("second", "second"), ("_", "first"), ("no-such-graph", "first"), (None, "first")])
async def test_run_start_picks_the_graph_its_assistant_id_names_else_the_first(assistant_id, graph):
    thread = str(uuid.uuid4())
    await run(thread, assistant_id)
    assert await served_by(thread) == graph
    assert (await db_executor.run(lambda: ChatThread.objects.get(pk=thread).graph_name)) == graph
    tree = (await command(thread, "agent.getTree", {}))["result"]["tree"]
    assert tree["graph_name"] == graph and tree["status"] == "completed"


async def test_a_thread_keeps_its_graph_for_later_runs_unless_another_is_named():
    thread = str(uuid.uuid4())
    # The examples bootstrap the thread before its first run (POST /state, no assistant id: the first graph).
    status, _ = await call("POST", f"/api/threads/{thread}/state", {"values": {"messages": []}})
    assert status == 200
    await run(thread, "second")
    await run(thread, "_")
    assert await served_by(thread) == "second"
    _, state = await call("GET", f"/api/threads/{thread}/state")
    assert state["values"]["second"] == "second graph, 1 message(s)"
    await run(thread, "first")
    assert await served_by(thread) == "first"


async def test_a_thread_whose_graph_is_no_longer_served_goes_on_with_the_first():
    thread = str(uuid.uuid4())
    await run(thread, "second")
    served_graphs.configure_graphs({"first": GRAPHS["first"]})
    await run(thread, "_")
    assert await served_by(thread) == "first"
    assert (await db_executor.run(lambda: ChatThread.objects.get(pk=thread).graph_name)) == "first"


def test_configuring_no_graph_at_all_is_refused():
    with pytest.raises(served_graphs.GraphLoadError):
        served_graphs.configure_graphs({})
    assert served_graphs.graph_name_for("_") == "first"

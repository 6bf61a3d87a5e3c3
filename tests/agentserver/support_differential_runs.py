"""The runs part of the differential scenario: every stream mode on every test graph, then the run operations
(background, wait, join, list, get, cancel, multitask reject, resume after an interrupt, stateless) and their
errors. Played by tests/agentserver/test_differential.py against `langgraph dev` and ours."""

from __future__ import annotations

from tests.agentserver.support_differential import Step, new_id

INPUTS = {
    "echo": {"messages": [{"content": "hi"}]},
    "nested": {"steps": ["start"]},
    "asker": {"question": "Go?"},
    "slow": {"steps": 2, "delay": 0.01},
    "chat": {"messages": [{"role": "human", "content": "hello big world"}]},
}
MODES = [["values"], ["updates"], ["messages"], ["messages-tuple"], ["debug"], ["custom"], ["tasks"],
         ["checkpoints"], ["values", "updates", "messages-tuple", "custom", "tasks", "checkpoints"],
         ["messages", "debug"], ["events"], ["events", "values", "messages-tuple"]]
# Subgraph namespaces only change anything where there is a subgraph, or a node run as a task (the chat model).
SUBGRAPH_GRAPHS = ("nested", "chat", "asker")


def stream_steps() -> list[Step]:
    steps = []
    for graph, graph_input in INPUTS.items():
        for modes in MODES:
            for subgraphs in (False, True) if graph in SUBGRAPH_GRAPHS else (False,):
                body = {"assistant_id": graph, "input": graph_input, "stream_mode": modes,
                        "stream_subgraphs": subgraphs, "if_not_exists": "create"}
                steps.append(Step("POST", f"/threads/{new_id()}/runs/stream", body, stream=True))
    return steps


def run_steps() -> list[Step]:
    thread, busy, asking, missing = new_id(), new_id(), new_id(), new_id()
    echo = {"assistant_id": "echo", "input": INPUTS["echo"]}
    runs = f"/threads/{thread}/runs"
    return [
        Step("POST", "/threads", {"thread_id": thread}),
        # A background run: the run object, then its result, its state, the list.
        Step("POST", runs, {**echo, "metadata": {"purpose": "first"}}, save="first"),
        Step("GET", runs + "/{first}/join"),
        Step("GET", runs + "/{first}"),
        Step("POST", runs + "/wait", echo),
        Step("GET", runs),
        Step("GET", runs + "?limit=1&offset=1"),
        Step("GET", runs + "?status=success"),
        Step("GET", f"/threads/{thread}"),
        # A run that waits for its time is pending: cancelling it ends it at once.
        Step("POST", runs, {**echo, "after_seconds": 600}, save="later"),
        Step("POST", runs + "/{later}/cancel"),
        Step("GET", runs + "/{later}", settle=runs + "/{later}"),
        Step("GET", runs + "/{later}/join"),
        Step("DELETE", runs + "/{first}"),
        Step("GET", runs + "/{first}"),
        # `reject` while the thread is busy.
        Step("POST", f"/threads/{busy}/runs", {"assistant_id": "slow", "input": {"steps": 2, "delay": 0.5},
                                               "if_not_exists": "create"}, save="slow"),
        Step("POST", f"/threads/{busy}/runs", {**echo, "multitask_strategy": "reject"}),
        Step("GET", f"/threads/{busy}/runs/{{slow}}/join"),
        Step("GET", f"/threads/{busy}/runs/{{slow}}"),
        # An interrupt, then `command: {resume}`.
        Step("POST", f"/threads/{asking}/runs/wait", {"assistant_id": "asker", "input": INPUTS["asker"],
                                                      "if_not_exists": "create"}),
        Step("GET", f"/threads/{asking}"),
        Step("GET", f"/threads/{asking}/state"),
        Step("POST", f"/threads/{asking}/runs/stream", {"assistant_id": "asker", "command": {"resume": "yes"},
                                                        "stream_mode": ["values", "updates", "events"]}, stream=True),
        Step("GET", f"/threads/{asking}"),
        Step("GET", f"/threads/{asking}/state"),
        Step("GET", f"/threads/{asking}/runs"),
        # Stateless runs.
        Step("POST", "/runs/wait", echo),
        Step("POST", "/runs", echo),
        Step("POST", "/runs/stream", {**echo, "stream_mode": ["values", "updates"]}, stream=True),
        Step("POST", "/runs/wait", {"assistant_id": "nested", "input": INPUTS["nested"]}),
        # What is not there, and what is malformed.
        Step("POST", f"/threads/{missing}/runs", echo),
        Step("POST", f"/threads/{missing}/runs/wait", echo),
        Step("GET", f"/threads/{missing}/runs"),
        Step("POST", runs, {**echo, "assistant_id": new_id()}),
        Step("POST", runs, {**echo, "assistant_id": "no-such-graph"}),
        Step("GET", f"{runs}/{new_id()}"),
        Step("POST", f"{runs}/{new_id()}/cancel"),
        Step("POST", runs, {**echo, "stream_mode": ["bogus"]}),
        Step("POST", runs + "/stream", {**echo, "stream_mode": "bogus"}),
        Step("POST", runs, {"input": INPUTS["echo"]}),
        Step("POST", runs, {**echo, "multitask_strategy": "sometimes"}),
        Step("POST", runs, raw=b'{"assistant_id": '),
        Step("POST", "/runs/wait", {"assistant_id": new_id(), "input": {}}),
    ]

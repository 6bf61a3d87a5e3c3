"""Conversion of LangGraph's v3 stream to the JS wire (the nine §9.3 differences) and subscription matching."""

from __future__ import annotations

import json
import uuid

import orjson
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt, Send

from agentruntime.events.records import dumps, infer_channel, make_event
from agentruntime.events.subscriptions import InvalidSubscription, Subscription, parse_subscription
from agentruntime.served_graphs import BASE_TRANSFORMERS
from chat.agent.graph import build_graph
from chat.agent.prompts import EXAMPLE_PROMPT
from chat.conversion import EventConverter

pytestmark = [pytest.mark.no_postgres_pass,
              pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")]


@pytest.fixture(scope="module")
def wire_events():
    """The converted events of one example run of the real deep agent (scripted model)."""
    import asyncio

    graph = build_graph(InMemorySaver(), model="")

    async def run():
        converter, converted = EventConverter(), []
        stream = await graph.astream_events({"messages": [HumanMessage(EXAMPLE_PROMPT)]},
                                            {"configurable": {"thread_id": str(uuid.uuid4())}},
                                            version="v3", transformers=[*BASE_TRANSFORMERS, converter.observer])
        async for raw in stream:
            converted += converter.convert(raw)
        return converted

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHAT_AGENT_DELAY_SCALE", "0")
        events = asyncio.run(run())
    return [orjson.loads(event.encode(seq)) for seq, event in enumerate(events, start=1)]


def of(events, method):
    return [e for e in events if e["method"] == method]


def test_messages_carry_the_payload_alone_with_the_node(wire_events):
    messages = of(wire_events, "messages")
    assert messages and all(isinstance(e["params"]["data"], dict) and "event" in e["params"]["data"]
                            for e in messages)
    assert {e["params"]["node"] for e in messages} == {"model"}


def test_subagent_lifecycle_events_sit_at_the_subagents_namespace(wire_events):
    lifecycle = of(wire_events, "lifecycle")
    assert lifecycle and all(e["params"]["namespace"] for e in lifecycle)
    assert all("namespace" not in e["params"]["data"] and "trigger_call_id" not in e["params"]["data"]
               for e in lifecycle)
    started = {e["params"]["data"]["graph_name"]: e["params"]["namespace"] for e in lifecycle
               if e["params"]["data"]["event"] == "started"}
    assert set(started) == {"researcher", "math-whiz"}
    assert all(len(ns) == 1 and ns[0].startswith("tools:") for ns in started.values())


def test_each_tool_call_sits_at_its_own_task_namespace_where_a_delegated_subagent_runs(wire_events):
    spaces: dict[str, set] = {}
    for e in of(wire_events, "tools"):
        spaces.setdefault(e["params"]["data"]["tool_call_id"], set()).add(tuple(e["params"]["namespace"]))
    assert all(len(found) == 1 for found in spaces.values())  # started and finished at the same place
    namespace = {e["params"]["data"]["tool_name"] + ":" + e["params"]["data"].get("input", {}).get(
        "subagent_type", ""): spaces[e["params"]["data"]["tool_call_id"]].pop() for e in of(wire_events, "tools")
        if e["params"]["data"]["event"] == "tool-started"}
    subagents = {e["params"]["data"]["graph_name"]: tuple(e["params"]["namespace"])
                 for e in of(wire_events, "lifecycle") if e["params"]["data"]["event"] == "started"}
    for subagent, tool in (("researcher", "search_web:"), ("math-whiz", "calculator:")):
        # The coordinator's `task` call at ["tools:<T>"], the namespace the subagent it starts runs in (as in JS)...
        assert namespace["task:" + subagent] == subagents[subagent]
        assert len(subagents[subagent]) == 1 and subagents[subagent][0].startswith("tools:")
        # ...and the subagent's own tool call one task deeper: the client never takes it for the coordinator's.
        assert namespace[tool][:1] == subagents[subagent] and len(namespace[tool]) == 2
        assert namespace[tool][1].startswith("tools:")


def test_a_tool_call_without_an_observed_task_keeps_its_graphs_namespace():
    converter = EventConverter()
    started = {"method": "tools", "params": {"namespace": [], "timestamp": 1, "data": {
        "event": "tool-started", "tool_call_id": "c1", "tool_name": "t", "input": {}}}}
    assert converter.convert(started)[0].namespace == []
    observer = converter.observer(())
    observer.process({"method": "tasks", "params": {"namespace": [], "data": {
        "id": "T1", "name": "tools", "input": {"tool_call": {"id": "c1", "name": "t", "args": {}}, "state": {}}}}})
    assert converter.convert(started)[0].namespace == ["tools:T1"]
    # A subgraph's mux sees the same task again; only the run's own mux records it.
    converter.observer(("tools:T1",)).process({"method": "tasks", "params": {"namespace": ["tools:T1"], "data": {
        "id": "U1", "name": "tools", "input": [{"id": "c2", "name": "t", "args": {}}]}}})
    assert converter.convert({**started, "params": {**started["params"], "data": {
        "event": "tool-started", "tool_call_id": "c2", "tool_name": "t"}}})[0].namespace == []


def test_checkpoints_and_updates_have_the_js_envelopes(wire_events):
    checkpoints = of(wire_events, "checkpoints")
    assert checkpoints and all(set(e["params"]["data"]) == {"id", "parent_id", "step", "source"}
                               for e in checkpoints)
    assert {e["params"]["data"]["source"] for e in checkpoints} >= {"input", "loop"}
    updates = of(wire_events, "updates")
    assert updates and all(set(e["params"]["data"]) == {"node", "values"} for e in updates)
    assert all(e["params"]["node"] == e["params"]["data"]["node"] for e in updates)


def test_live_objects_are_serialised_like_the_js_server(wire_events):
    finished = [e["params"]["data"] for e in of(wire_events, "tools") if e["params"]["data"]["event"] ==
                "tool-finished" and e["params"]["data"]["output"].get("lg_name")]
    assert len(finished) == 2
    for data in finished:
        assert data["output"]["lg_name"] == "Command" and data["output"]["goto"] == []
        assert data["output"]["update"]["messages"][0]["type"] == "tool"
    root_values = [e for e in of(wire_events, "values") if e["params"]["namespace"] == []]
    assert [m["type"] for m in root_values[-1]["params"]["data"]["messages"]] == ["human", "ai", "tool", "tool", "ai"]


def test_tool_call_arguments_stream_as_block_deltas_with_accumulated_arguments(wire_events):
    deltas = [e["params"]["data"]["delta"] for e in of(wire_events, "messages")
              if e["params"]["data"]["event"] == "content-block-delta"]
    assert not [d for d in deltas if d["type"] == "tool-call-delta"]
    blocks = [d["fields"] for d in deltas if d["type"] == "block-delta"]
    assert blocks and all(b["type"] == "tool_call_chunk" and b["id"] and b["name"] for b in blocks)
    finals = {e["params"]["data"]["content"]["id"]: e["params"]["data"]["content"]["args"]
              for e in of(wire_events, "messages") if e["params"]["data"]["event"] == "content-block-finish"
              and e["params"]["data"]["content"]["type"] == "tool_call"}
    last_args = {b["id"]: b["args"] for b in blocks}
    assert {k: json.loads(v) for k, v in last_args.items()} == finals


def test_the_coordinators_reasoning_streams_as_a_reasoning_block(wire_events):
    root = [e["params"]["data"] for e in of(wire_events, "messages") if e["params"]["namespace"] == []]
    assert any(d["event"] == "content-block-start" and d["content"]["type"] == "reasoning" for d in root)
    assert any(d["event"] == "content-block-delta" and d["delta"]["type"] == "reasoning-delta" for d in root)


def test_event_ids_are_the_seq(wire_events):
    assert [e["seq"] for e in wire_events] == list(range(1, len(wire_events) + 1))
    assert all(e["event_id"] == str(e["seq"]) and e["type"] == "event" for e in wire_events)


def test_interleaved_tool_call_streams_accumulate_separately():
    converter = EventConverter()

    def raw(ns, run, payload):
        return {"method": "messages", "params": {"namespace": ns, "timestamp": 1,
                                                 "data": (payload, {"run_id": run, "langgraph_node": "model"})}}

    for ns, run in ((["a"], "r1"), (["b"], "r2")):
        converter.convert(raw(ns, run, {"event": "message-start", "role": "ai", "id": run}))
        converter.convert(raw(ns, run, {"event": "content-block-start", "index": 0,
                                        "content": {"type": "tool_call_chunk", "id": f"c-{run}", "name": "t",
                                                    "args": ""}}))
    out = []
    for piece, (ns, run) in [('{"x"', (["a"], "r1")), ('{"y"', (["b"], "r2")), (": 1}", (["a"], "r1"))]:
        out += converter.convert(raw(ns, run, {"event": "content-block-delta", "index": 0,
                                               "delta": {"type": "tool-call-delta", "args": piece}}))
    fields = [orjson.loads(e.params)["data"]["delta"]["fields"] for e in out]
    assert [(f["id"], f["args"]) for f in fields] == [("c-r1", '{"x"'), ("c-r2", '{"y"'), ("c-r1", '{"x": 1}')]


def test_sends_interrupts_and_huge_integers_serialise():
    data = json.loads(dumps({"send": Send("node", {"a": 1}), "interrupt": Interrupt(value="ok?", id="i1"),
                             "big": 10 ** 30, "command": Command(goto="x")}))
    assert data["send"] == {"lg_name": "Send", "node": "node", "arg": {"a": 1}}
    assert data["interrupt"] == {"value": "ok?", "id": "i1"}
    assert data["big"] == 10 ** 30 and data["command"]["goto"] == ["x"]


def test_interrupts_at_the_root_become_input_requests():
    converter = EventConverter()
    events = converter.convert({"method": "values", "params": {"namespace": [], "timestamp": 1, "data": {},
                                                               "interrupts": (Interrupt(value="approve?", id="i9"),)}})
    assert [e.method for e in events] == ["values", "input.requested"]
    assert orjson.loads(events[1].params)["data"] == {"interrupt_id": "i9", "payload": "approve?"}
    assert converter.interrupts


@pytest.mark.parametrize(("method", "data", "channel"), [
    ("values", {}, "values"), ("input.requested", {}, "input"), ("custom", {"name": "progress"}, "custom:progress"),
    ("custom", {"i": 1}, "custom"), ("custom", "text", "custom"), ("debug", {}, ""),
])
def test_events_are_filed_under_their_protocol_channel(method, data, channel):
    assert infer_channel(method, data) == channel


# Subscription matching, agent-streaming-protocol.md §4.3.
MATCHING = [
    # channels, namespaces, depth, event channel, event namespace, expected
    (["values"], None, None, "values", [], True),
    (["values"], None, None, "messages", [], False),
    (["custom"], None, None, "custom:progress", ["x"], True),
    (["custom:progress"], None, None, "custom:progress", [], True),
    (["custom:progress"], None, None, "custom:other", [], False),
    (["custom:progress"], None, None, "custom", [], False),
    (["values"], [], None, "values", ["tools:1", "model:2"], True),
    (["values"], [[]], None, "values", ["tools:1", "model:2"], True),
    (["values"], [[]], 1, "values", ["tools:1"], True),
    (["values"], [[]], 1, "values", ["tools:1", "model:2"], False),
    (["values"], [[]], 0, "values", [], True),
    (["values"], [["tools"]], None, "values", ["tools:abc"], True),
    (["values"], [["tools"]], None, "values", ["model:abc"], False),
    (["values"], [["tools:abc"]], None, "values", ["tools:abc", "model:1"], True),
    (["values"], [["tools:abc"]], None, "values", ["tools:abd"], False),
    (["values"], [["tools:abc"]], None, "values", ["tools"], False),
    (["values"], [["tools:abc"]], None, "values", [], False),
    (["values"], [["tools:abc"]], 0, "values", ["tools:abc", "model:1"], False),
    (["values"], [["model"], ["tools:abc"]], 0, "values", ["tools:abc"], True),
    (["lifecycle", "input"], None, None, "input", ["tools:x"], True),
    (["values"], None, None, "", [], False),
]


@pytest.mark.parametrize(("channels", "namespaces", "depth", "channel", "namespace", "expected"), MATCHING)
def test_subscription_matching_follows_the_protocol(channels, namespaces, depth, channel, namespace, expected):
    body = {"channels": channels, **({"namespaces": namespaces} if namespaces is not None else {}),
            **({"depth": depth} if depth is not None else {})}
    assert parse_subscription(body).matches(channel, namespace) is expected


@pytest.mark.parametrize(("body", "last_event_id", "since"), [
    ({"channels": ["values"]}, None, None),
    ({"channels": ["values"]}, "-", None),
    ({"channels": ["values"]}, "17", 17),
    ({"channels": ["values"], "since": 5}, "17", 5),
])
def test_the_cursor_comes_from_since_else_last_event_id(body, last_event_id, since):
    assert parse_subscription(body, last_event_id).since == since


@pytest.mark.parametrize(("body", "last_event_id"), [
    ([], None), ({}, None), ({"channels": []}, None), ({"channels": ["nope"]}, None),
    ({"channels": ["values"], "namespaces": "tools"}, None), ({"channels": ["values"], "depth": -1}, None),
    ({"channels": ["values"], "since": "3"}, None), ({"channels": ["values"]}, "abc"),
])
def test_bad_stream_requests_are_refused(body, last_event_id):
    with pytest.raises(InvalidSubscription):
        parse_subscription(body, last_event_id)


def test_equal_filters_share_a_key_whatever_their_cursor():
    first = Subscription(channels=frozenset({"values"}), since=3)
    assert first.filter_key == Subscription(channels=frozenset({"values"}), since=9).filter_key


def test_events_encode_with_their_seq():
    event = make_event("custom", ["a"], {"i": 1}, timestamp=5)
    assert orjson.loads(event.encode(42)) == {"type": "event", "seq": 42, "event_id": "42", "method": "custom",
                                              "params": {"namespace": ["a"], "timestamp": 5, "data": {"i": 1}}}

"""StoreTracer records a LangGraph graph's run tree (subgraph, tools, a failure) straight into the store."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from accounts.services import workspace_create
from tracing import services
from tracing.models import Run
from tracing.tracer import StoreTracer, flush

# The writer thread has its own database connection: it must see committed rows, and commit.
pytestmark = pytest.mark.django_db(transaction=True)

PLAN_USAGE = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}
ANSWER_USAGE = {"input_tokens": 20, "output_tokens": 6, "total_tokens": 26}


@tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"sunny in {city}"


@tool
def broken(city: str) -> str:
    """A weather service that is down."""
    raise RuntimeError("weather service down")


def build_graph():
    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", usage_metadata=PLAN_USAGE, tool_calls=[
            {"name": "lookup", "args": {"city": "Paris"}, "id": "call-1"},
            {"name": "broken", "args": {"city": "Paris"}, "id": "call-2"}]),
        AIMessage(content="It is sunny in Paris.", usage_metadata=ANSWER_USAGE),
    ]))

    def plan(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    def answer(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    research = StateGraph(MessagesState)
    research.add_node("plan", plan)
    research.add_edge(START, "plan")
    research.add_edge("plan", END)

    graph = StateGraph(MessagesState)
    graph.add_node("research", research.compile())
    graph.add_node("tools", ToolNode([lookup, broken], handle_tool_errors=True))
    graph.add_node("answer", answer)
    graph.add_edge(START, "research")
    graph.add_edge("research", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def depth(run: Run) -> int:
    return run.dotted_order.count(".")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_tracer_records_the_graphs_run_tree_into_the_given_workspace_and_project(mode):
    workspace = workspace_create(name="chat-workspace")
    config = {"callbacks": [StoreTracer(workspace_id=workspace.id, project_name="chat")]}
    inputs = {"messages": [HumanMessage("Weather in Paris?")]}
    graph = build_graph()
    result = graph.invoke(inputs, config=config) if mode == "sync" else asyncio.run(graph.ainvoke(inputs, config))
    assert result["messages"][-1].content == "It is sunny in Paris."
    assert flush(timeout=30)

    runs = list(Run.objects.filter(workspace=workspace))
    assert runs and {run.session.name for run in runs} == {"chat"}
    by_id = {run.id: run for run in runs}
    [root] = [run for run in runs if run.is_root]
    assert root.name == "LangGraph" and root.status == "success" and root.parent_run_id is None
    for run in runs:
        assert run.trace_id == root.id
        assert run.dotted_order.endswith(str(run.id))
        if run is not root:
            parent = by_id[run.parent_run_id]
            assert run.dotted_order.startswith(parent.dotted_order + ".") and depth(run) == depth(parent) + 1
            assert run.parent_run_ids == [*parent.parent_run_ids, str(parent.id)] and not run.is_root

    tree = [(depth(run), run.name, run.run_type, run.status) for run in sorted(runs, key=lambda r: r.dotted_order)]
    assert tree == [
        (0, "LangGraph", "chain", "success"),
        (1, "research", "chain", "success"),
        (2, "LangGraph", "chain", "success"),  # the nested subgraph
        (3, "plan", "chain", "success"),
        (4, "GenericFakeChatModel", "llm", "success"),
        (1, "tools", "chain", "success"),
        (2, "lookup", "tool", "success"),
        (2, "broken", "tool", "error"),
        (1, "answer", "chain", "success"),
        (2, "GenericFakeChatModel", "llm", "success"),
    ]
    by_name = {}
    for run in runs:
        by_name.setdefault(run.name, []).append(run)
    llms = sorted(by_name["GenericFakeChatModel"], key=lambda run: run.dotted_order)
    assert [(run.prompt_tokens, run.completion_tokens, run.total_tokens) for run in llms] == [(10, 4, 14), (20, 6, 26)]
    assert llms[0].inputs["messages"][0][0]["kwargs"]["content"] == "Weather in Paris?"
    assert all(run.total_tokens is None for run in runs if run.run_type != "llm")

    [good_tool], [bad_tool] = by_name["lookup"], by_name["broken"]
    assert good_tool.run_type == "tool" and good_tool.status == "success" and "sunny in Paris" in str(
        good_tool.outputs)
    assert bad_tool.run_type == "tool" and bad_tool.status == "error" and "weather service down" in bad_tool.error
    assert all(run.end_time and run.end_time >= run.start_time for run in runs)


class FailingChatModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "failing"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise ConnectionError("model provider unreachable")


def test_a_failed_model_call_is_recorded_with_its_error():
    workspace = workspace_create(name="chat-workspace")
    tracer = StoreTracer(workspace_id=workspace.id, project_name="chat")
    with pytest.raises(ConnectionError):
        FailingChatModel().invoke("hi", config={"callbacks": [tracer]})
    assert flush(timeout=30)
    run = Run.objects.get(workspace=workspace)
    assert run.run_type == "llm" and run.status == "error" and "model provider unreachable" in run.error
    assert run.is_root and run.trace_id == run.id


def test_a_storage_failure_is_logged_and_never_reaches_the_traced_code(caplog, monkeypatch):
    def fail(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(services, "runs_ingest", fail)
    workspace = workspace_create(name="chat-workspace")
    with caplog.at_level(logging.ERROR, logger="tracing.tracer"):
        result = build_graph().invoke({"messages": [HumanMessage("Weather?")]}, config={
            "callbacks": [StoreTracer(workspace_id=workspace.id, project_name="chat")]})
        assert flush(timeout=30)
    assert result["messages"][-1].content == "It is sunny in Paris."
    assert "database on fire" in caplog.text and not Run.objects.exists()


def test_runs_for_a_workspace_that_does_not_exist_are_dropped_with_a_log_line(caplog):
    missing = uuid.uuid4()
    with caplog.at_level(logging.ERROR, logger="tracing.tracer"):
        GenericFakeChatModel(messages=iter([AIMessage("ok")])).invoke(
            "hi", config={"callbacks": [StoreTracer(workspace_id=missing, project_name="chat")]})
        assert flush(timeout=30)
    assert f"workspace {missing} does not exist" in caplog.text and not Run.objects.exists()

"""The deep agent offline: the calculator, the scripted model's reading of requests, whole runs, graph loading."""

from __future__ import annotations

import json
import uuid

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agentruntime.served_graphs import CheckpointsTransformer, GraphLoadError, load_graph
from chat.agent.graph import build_graph
from chat.agent.language_models import UnavailableChatModel, build_models, missing_provider_key
from chat.agent.planner import plan_request
from chat.agent.prompts import COORDINATOR_PROMPT, EXAMPLE_PROMPT
from chat.agent.scripted import ScriptedChatModel, stream_pieces
from chat.agent.tools import calculator, evaluate_expression, search_web

pytestmark = pytest.mark.no_postgres_pass


@pytest.fixture(autouse=True)
def fast_agent(monkeypatch):
    monkeypatch.setenv("CHAT_AGENT_DELAY_SCALE", "0")


@pytest.mark.parametrize(("expression", "result"), [
    ("42 * 17", "714"),
    ("42 × 17", "714"),
    ("84 ÷ 4", "21"),
    ("10 − 3 – 2 — 1", "4"),
    ("2^10", "1024"),
    ("(1 + 2) * 3 / 4", "2.25"),
    ("0.1 + 0.2", "0.30000000000000004"),
    ("sqrt(16) + abs(-2)", "6"),
    ("-7 % 3", "2"),
    ("2 * pi", "6.283185307179586"),
])
def test_the_calculator_evaluates_arithmetic_like_mathjs(expression, result):
    assert evaluate_expression(expression) == result


@pytest.mark.parametrize(("expression", "reason"), [
    ("1 / 0", "division by zero"),
    ("__import__('os').system('id')", "unsupported element"),
    ("open('/etc/passwd')", "unsupported element"),
    ("(1).__class__", "unsupported element"),
    ("9 ** 9 ** 9", "too large"),
    ("2 +", "invalid syntax"),
    ("sqrt(-1)", "math domain error"),
    ("x + 1", "unsupported element 'x'"),
    ("1" * 600, "longer than"),
])
def test_the_calculator_answers_bad_input_with_an_error_text_and_never_evaluates_code(expression, reason):
    answer = evaluate_expression(expression)
    assert answer.startswith(f"Error evaluating: {expression} (") and reason in answer


async def test_the_calculator_returns_what_the_examples_return():
    assert await calculator.ainvoke({"expression": "42 * 17"}) == "714"


async def test_the_mock_search_answers_about_the_query_and_says_it_is_a_mock():
    found = json.loads(await search_web.ainvoke({"query": "the history of the abacus"}))
    [result] = found["results"]
    assert result["title"] == "Mock result for: the history of the abacus"
    assert result["mock"] is True
    assert "mock" in result["snippet"] and "the history of the abacus" in result["snippet"]
    assert "LangGraph" not in result["snippet"]


@pytest.mark.parametrize(("prompt", "lookups", "calculations"), [
    (EXAMPLE_PROMPT, ["LangGraph streaming"], ["42 * 17"]),
    ("Look up the history of the Eiffel Tower", ["the history of the Eiffel Tower"], []),
    ("Who wrote Dune?", ["Who wrote Dune"], []),
    ("What is 12 * (3 + 4)?", [], ["12 * (3 + 4)"]),
    ("Calculate 6 times 7 and tell me about Django Channels", ["Django Channels"], ["6 * 7"]),
    ("Compute 3 squared, then search for SSE heartbeats", ["SSE heartbeats"], ["3 ^ 2"]),
    ("Explain how checkpointers work; also 100 / 7", ["how checkpointers work"], ["100 / 7"]),
    ("hello there", [], []),
])
def test_the_scripted_model_reads_lookups_and_arithmetic_in_any_phrasing(prompt, lookups, calculations):
    plan = plan_request(prompt)
    assert (plan.lookups, plan.calculations) == (lookups, calculations)


def test_the_coordinator_delegates_both_kinds_in_parallel_with_a_reasoning_summary():
    message = ScriptedChatModel(role="coordinator").respond([HumanMessage(EXAMPLE_PROMPT, id="h")])
    assert [(c["name"], c["args"]["subagent_type"]) for c in message.tool_calls] == [
        ("task", "researcher"), ("task", "math-whiz")]
    assert message.content[0]["type"] == "reasoning" and "in parallel" in message.content[0]["reasoning"]


def test_the_scripted_model_is_deterministic_but_never_reuses_a_tool_call_id_across_turns():
    model = ScriptedChatModel(role="coordinator")
    first = model.respond([HumanMessage("calculate 1 + 1", id="a")])
    assert model.respond([HumanMessage("calculate 1 + 1", id="a")]) == first
    second = model.respond([HumanMessage("calculate 1 + 1", id="a"), first,
                            ToolMessage("2", tool_call_id=first.tool_calls[0]["id"]),
                            AIMessage("done"), HumanMessage("calculate 1 + 1", id="b")])
    assert second.tool_calls[0]["id"] != first.tool_calls[0]["id"]


def test_counts_in_the_reasoning_are_pluralised_properly():
    model = ScriptedChatModel(role="coordinator")
    one = model.respond([HumanMessage("Research owls", id="h")]).content[0]["reasoning"]
    assert "1 lookup for the researcher" in one and "(s)" not in one
    two = model.respond([HumanMessage("Research owls and research bats, then calculate 1 + 2", id="h")])
    reasoning = two.content[0]["reasoning"]
    assert "2 lookups for the researcher and 1 calculation for math-whiz" in reasoning and "(s)" not in reasoning
    call = two.tool_calls[0]
    answer = model.respond([HumanMessage("Research owls", id="h"), AIMessage("", tool_calls=[call]),
                            ToolMessage("Owls hunt at night.", tool_call_id=call["id"])])
    assert answer.content[0]["reasoning"].startswith("1 subagent result arrived; combining it")


def test_a_rerun_of_the_same_turn_gets_new_tool_call_ids():
    model = ScriptedChatModel(role="coordinator")
    turn = [HumanMessage("calculate 1 + 1", id="a")]
    assert model.respond(turn, run="r1") == model.respond(turn, run="r1")
    assert model.respond(turn, run="r1").tool_calls[0]["id"] != model.respond(turn, run="r2").tool_calls[0]["id"]


def test_streamed_pieces_carry_the_reasoning_the_words_and_the_tool_call_arguments():
    message = ScriptedChatModel(role="coordinator").respond([HumanMessage("Research owls", id="h")])
    pieces = stream_pieces(message)
    reasoning = "".join(p.content[0]["reasoning"] for p in pieces if p.content and p.content[0]["type"] == "reasoning")
    arguments = "".join(c["args"] for p in pieces for c in p.tool_call_chunks)
    assert reasoning == message.content[0]["reasoning"]
    assert json.loads(arguments) == message.tool_calls[0]["args"]


async def _run(graph, text: str) -> list:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    result = await graph.ainvoke({"messages": [{"type": "human", "content": text}]}, config)
    return result["messages"]


def _answer(messages) -> str:
    content = messages[-1].content
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content
                                                            if b.get("type") == "text")


def _subagents_called(messages) -> list[str]:
    return [c["args"]["subagent_type"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


@pytest.fixture(scope="module")
def graph():
    return build_graph(InMemorySaver(), model="")


async def test_a_lookup_alone_goes_to_the_researcher_only(graph):
    messages = await _run(graph, "Search for the tallest building in Paris")
    assert _subagents_called(messages) == ["researcher"]
    assert "**Research** (researcher): I searched for \"the tallest building in Paris\"" in _answer(messages)


async def test_the_abacus_question_is_answered_about_the_abacus_and_says_the_search_is_a_mock(graph):
    messages = await _run(graph, "Research the history of the abacus")
    answer = _answer(messages)
    assert answer.startswith("**Research** (researcher): I searched for \"the history of the abacus\".")
    assert "mock" in answer and "no real findings about the history of the abacus" in answer
    assert "LangGraph" not in answer and "(s)" not in answer


async def test_arithmetic_alone_goes_to_the_math_whiz_only(graph):
    messages = await _run(graph, "How much is 1234 + 4321?")
    assert _subagents_called(messages) == ["math-whiz"]
    assert "**Math** (math-whiz): 1234 + 4321 = 5555" in _answer(messages)


async def test_the_example_prompt_is_answered_from_both_tool_results(graph):
    answer = _answer(await _run(graph, EXAMPLE_PROMPT))
    assert "42 * 17 = 714" in answer and "no real findings about LangGraph streaming" in answer


async def test_a_bad_expression_is_reported_from_the_calculator_error(graph):
    assert "Error evaluating: 7 / 0 (division by zero)" in _answer(await _run(graph, "calculate 7 / 0"))


async def test_small_talk_gets_a_direct_answer_that_says_the_offline_model_is_in_use(graph):
    messages = await _run(graph, "hello")
    assert len(messages) == 2 and "offline scripted model" in _answer(messages)


def test_a_real_model_without_its_key_gives_models_that_fail_naming_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert missing_provider_key("openai:gpt-5.4-mini") == "OPENAI_API_KEY"
    coordinator, researcher, _ = build_models("openai:gpt-5.4-mini")
    assert isinstance(coordinator, UnavailableChatModel)
    with pytest.raises(Exception, match="OPENAI_API_KEY is not set"):
        researcher.invoke("hi")


def test_a_real_model_gets_reasoning_summaries_on_the_coordinator_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    coordinator, researcher, _ = build_models("openai:gpt-5.4-mini")
    assert coordinator.reasoning == {"effort": "low", "summary": "auto"} and coordinator.use_responses_api
    assert researcher.reasoning is None and not researcher.use_responses_api
    assert COORDINATOR_PROMPT.startswith("You are a helpful coordinator.")


def test_a_graph_loads_from_a_module_path_a_file_path_and_a_factory(tmp_path):
    saver = InMemorySaver()
    assert load_graph("chat.agent.graph:build_graph", checkpointer=saver).graph.name == "LangGraph"
    module = tmp_path / "my_graph.py"
    module.write_text(
        "from langgraph.graph import StateGraph, START, END\n"
        "from typing_extensions import TypedDict\n"
        "from langgraph.stream.transformers import CustomTransformer\n"
        "class S(TypedDict):\n    n: int\n"
        "builder = StateGraph(S)\nbuilder.add_node('inc', lambda s: {'n': s['n'] + 1})\n"
        "builder.add_edge(START, 'inc')\nbuilder.add_edge('inc', END)\n"
        "compiled = builder.compile()\n"
        "def stream_transformers():\n    return [CustomTransformer]\n")
    for spec in (f"{module}:builder", f"{module}:compiled"):
        served = load_graph(spec, checkpointer=saver)
        # Threads persist in the server's checkpointer, whatever the module compiled in.
        config = {"configurable": {"thread_id": spec}}
        assert served.graph.invoke({"n": 1}, config) == {"n": 2}
        assert saver.get_tuple(config) is not None
        assert served.transformers[0] is CheckpointsTransformer
        assert [t.__name__ for t in served.transformers][-1] == "CustomTransformer"


@pytest.mark.parametrize("spec", ["no-colon", "chat.nowhere:graph", "chat.agent.graph:missing", "./nope.py:g",
                                  "chat.agent.prompts:COORDINATOR_PROMPT"])
def test_a_bad_graph_spec_is_a_clear_error(spec):
    with pytest.raises(GraphLoadError):
        load_graph(spec, checkpointer=InMemorySaver())


def test_a_request_with_nothing_to_delegate_gets_a_markdown_answer_that_streams_back_intact():
    message = ScriptedChatModel(role="coordinator").respond([HumanMessage("hello", id="h")])
    text = message.content[1]["text"]
    assert text.startswith("### What the offline model can do") and "| You write | Goes to |" in text
    assert '```json\n{\n  "id": 1,' in text
    pieces = [p.content[0] for p in stream_pieces(message) if p.content]
    streamed = "".join(piece["text"] for piece in pieces if piece["type"] == "text")
    assert streamed == text

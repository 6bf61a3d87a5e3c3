"""The offline scripted chat model: the default when CHAT_MODEL is unset.

It decides from the conversation alone (no counters, so parallel subagents cannot confuse it), streams its answer
word by word, streams tool-call arguments in pieces, and gives the coordinator a short reasoning summary, so that a
UI and the official clients see everything a real model would send.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from chat.agent.memory import (
    MEMORY_ROUTE,
    Recall,
    Remember,
    file_text,
    listed_paths,
    memory_request,
    recalled,
    second_person,
)
from chat.agent.planner import calculation_expression, find_expressions, plan_request, research_query
from chat.agent.prompts import MATH_NAME, RESEARCHER_NAME
from chat.agent.review import Review, review_of
from chat.agent.tools import delay_scale

MODEL_NAME = "scripted-offline"
TOKEN_DELAY_SECONDS = 0.02
Role = Literal["coordinator", "researcher", "math-whiz"]

# Markdown on purpose: besides saying what the offline model can do, it shows a page every kind of block it renders.
NOTHING_TO_DELEGATE = """### What the offline model can do

I am the offline scripted model, so I can only delegate:

- **lookups** go to the researcher, whose search tool is a mock;
- **arithmetic** goes to math-whiz, whose calculator is real.

| You write | Goes to |
|---|---|
| Research the history of the abacus | researcher |
| Calculate 42 * 17 | math-whiz |

Other clients start the same work with a `run.start` command:

```json
{
  "id": 1,
  "method": "run.start",
  "params": {
    "input": {"messages": [{"type": "human", "content": "Calculate 42 * 17"}]}
  }
}
```"""


class ScriptedChatModel(BaseChatModel):
    """A deterministic stand-in for a chat model, playing one role of the deep agent."""

    role: Role = "coordinator"
    token_delay: float = TOKEN_DELAY_SECONDS

    @property
    def _llm_type(self) -> str:
        return MODEL_NAME

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        # The script knows its tools by role; binding changes nothing.
        return self

    def respond(self, messages: Sequence[BaseMessage], *, run: str = "") -> AIMessage:
        """The whole answer to the conversation so far; `run` (the run's id) only seeds the tool-call ids."""
        turn = _current_turn(messages)
        if self.role == "coordinator":
            message = _coordinator_turn(turn, run)
        elif self.role == "researcher":
            message = _researcher_turn(turn, run)
        else:
            message = _math_turn(turn, run)
        words = sum(len(str(m.content).split()) for m in messages)
        output = len(_text_of(message).split()) + len(message.tool_calls) * 8
        message.usage_metadata = {"input_tokens": words, "output_tokens": output, "total_tokens": words + output}
        message.response_metadata = {"model_name": MODEL_NAME, "model_provider": "scripted"}
        return message

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages, run=_run_of(run_manager)))])

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs) -> AsyncIterator[ChatGenerationChunk]:
        message = self.respond(messages, run=_run_of(run_manager))
        pause = self.token_delay * delay_scale()
        for piece in stream_pieces(message):
            yield ChatGenerationChunk(message=piece)
            await asyncio.sleep(pause)
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", chunk_position="last", usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata))


def stream_pieces(message: AIMessage) -> list[AIMessageChunk]:
    """The chunks a streaming provider would send for `message`: reasoning, text words, tool-call fragments."""
    pieces: list[AIMessageChunk] = []
    # The scripted model's own messages (`_reasoned`) hold dict blocks only.
    blocks = (cast(list[dict[str, Any]], message.content) if isinstance(message.content, list)
              else [{"type": "text", "text": message.content}])
    blocks = [b for b in blocks if b.get(b.get("type", ""))]
    for index, block in enumerate(blocks):
        kind = block["type"]
        for word in _words(block[kind]):
            pieces.append(AIMessageChunk(content=[{"type": kind, kind: word, "index": index}]))
    for offset, call in enumerate(message.tool_calls, start=len(blocks)):
        arguments = json.dumps(call["args"])
        middle = max(1, len(arguments) // 2)
        pieces.append(AIMessageChunk(content="", tool_call_chunks=[
            {"name": call["name"], "args": arguments[:middle], "id": call["id"], "index": offset}]))
        pieces.append(AIMessageChunk(content="", tool_call_chunks=[
            {"name": None, "args": arguments[middle:], "id": None, "index": offset}]))
    return pieces


def _run_of(run_manager: Any) -> str:
    # The server puts its run id in the run's metadata. A regenerated answer (a fork re-running the same turn) must
    # not reuse the first answer's tool-call ids: the client keys subagent cards by them.
    metadata = getattr(run_manager, "metadata", None) or {}
    return str(metadata.get("run_id") or "")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 lookup', '2 lookups'."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def _words(text: str) -> list[str]:
    # Every space is kept (the pieces add up to the text): code blocks in an answer keep their indentation.
    words = text.split(" ")
    return [word if i == 0 else " " + word for i, word in enumerate(words)]


def _current_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The last human message and everything after it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].type == "human":
            return list(messages[index:])
    return list(messages)


def _text_of(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(b.get("text", "") for b in message.content if isinstance(b, dict) and b.get("type") == "text")


def _call_id(turn: Sequence[BaseMessage], index: int, run: str = "") -> str:
    # Deterministic for a given conversation and run, and different on every turn (the client keys subagents by it).
    seed = "|".join(f"{m.type}:{m.id}:{_text_of(m)}" for m in turn) + f"#{index}@{run}"
    return "call_" + hashlib.sha256(seed.encode()).hexdigest()[:24]


def _reasoned(reasoning: str, text: str = "", tool_calls: list | None = None) -> AIMessage:
    content: list[str | dict] = [{"type": "reasoning", "reasoning": reasoning}]
    if text:
        content.append({"type": "text", "text": text})
    return AIMessage(content=content, tool_calls=tool_calls or [])


def _coordinator_turn(turn: list[BaseMessage], run: str = "") -> AIMessage:
    request = _text_of(turn[0])
    memory = memory_request(request, has_arithmetic=bool(find_expressions(request)))
    if memory is not None:
        return _memory_turn(turn, memory, run)
    results = [m for m in turn if isinstance(m, ToolMessage)]
    if results:
        return _coordinator_answer(turn, results)
    plan = plan_request(_text_of(turn[0]))
    if plan.empty:
        return _reasoned("The request asks for neither a lookup nor a calculation, so there is nothing to "
                         "delegate.", NOTHING_TO_DELEGATE)
    calls = [(RESEARCHER_NAME, f"Research {topic}") for topic in plan.lookups]
    calls += [(MATH_NAME, f"Calculate {expression}") for expression in plan.calculations]
    parts = [f"{plural(len(plan.lookups), 'lookup')} for the researcher"] if plan.lookups else []
    parts += [f"{plural(len(plan.calculations), 'calculation')} for math-whiz"] if plan.calculations else []
    single = len(calls) == 1
    reasoning = (f"The request needs {' and '.join(parts)}; "
                 f"{'delegating it' if single else 'delegating them in parallel'}.")
    tool_calls = [
        {"name": "task", "args": {"description": description, "subagent_type": agent}, "id": _call_id(turn, i, run)}
        for i, (agent, description) in enumerate(calls)
    ]
    return _reasoned(reasoning, tool_calls=tool_calls)


def _coordinator_answer(turn: list[BaseMessage], results: list[ToolMessage]) -> AIMessage:
    agents = {call["id"]: call["args"].get("subagent_type", "subagent")
              for m in turn if isinstance(m, AIMessage) for call in m.tool_calls}
    labels = {RESEARCHER_NAME: "Research", MATH_NAME: "Math"}
    lines = []
    for result in results:
        review = review_of(result)
        agent = str(review.executed_args.get("subagent_type") or agents.get(result.tool_call_id, result.name))
        text = (f"I did not delegate this to {agent}: {review.rejection()}. Instead, I answer without its help."
                if review.rejected else review.text.strip())
        lines.append(f"**{labels.get(agent, 'Result')}** ({agent}): {text}")
    reasoning = (f"{plural(len(results), 'subagent result')} arrived; "
                 f"combining {'it' if len(results) == 1 else 'them'} into a labeled answer.")
    return _reasoned(reasoning, "\n\n".join(lines))


# --- long-term memory (chat/agent/memory.py): the coordinator's own file tools on /memories/ -------------------------

MAX_RECALLED_FILES = 10


def _memory_turn(turn: list[BaseMessage], request: Remember | Recall, run: str) -> AIMessage:
    """Remember a fact (write_file), or answer a question about the user from /memories/ (ls, then read_file)."""
    results = {m.tool_call_id: m for m in turn if isinstance(m, ToolMessage)}
    done = [(call, results[call["id"]]) for m in turn if isinstance(m, AIMessage) for call in m.tool_calls
            if call["id"] in results]
    for call, result in done:
        review = review_of(result)
        if review.rejected:
            return _reasoned("A person rejected a call to my memory; answering without it.",
                             f"I did not use my memory ({call['name']} on {MEMORY_ROUTE}): {review.rejection()}.")
    if isinstance(request, Remember):
        return _remember_turn(turn, request, done, run)
    return _recall_turn(turn, request, done, run)


def _memory_call(turn: list[BaseMessage], index: int, run: str, tool: str, **args: str) -> dict:
    return {"name": tool, "args": args, "id": _call_id(turn, index, run)}


def _remember_turn(turn: list[BaseMessage], request: Remember, done: list, run: str) -> AIMessage:
    if not done:
        return _reasoned(f"The user asks me to remember a fact: saving it under {MEMORY_ROUTE}, which outlasts this "
                         "conversation.", tool_calls=[_memory_call(
                             turn, 0, run, "write_file", file_path=request.path, content=request.fact + "\n")])
    call, result = done[-1]
    review = review_of(result)
    if result.status == "error":
        return _reasoned("Saving the fact failed.", f"I could not save that: {review.text.strip()}")
    path = review.executed_args.get("file_path", call["args"]["file_path"])
    return _reasoned("The fact is saved in my long-term memory.",
                     f"Noted: {second_person(request.fact)}. I saved it in `{path}`, so I will remember it in your "
                     f"other conversations too.")


def _recall_turn(turn: list[BaseMessage], request: Recall, done: list, run: str) -> AIMessage:
    if not done:
        return _reasoned(f"The question is about the user: looking in my long-term memory ({MEMORY_ROUTE}) first.",
                         tool_calls=[_memory_call(turn, 0, run, "ls", path=MEMORY_ROUTE)])
    reads = {call["args"].get("file_path", ""): file_text(review_of(result).text)
             for call, result in done if call["name"] == "read_file" and result.status != "error"}
    if not any(call["name"] == "read_file" for call, _ in done):
        paths = listed_paths(review_of(done[-1][1]).text)[:MAX_RECALLED_FILES]
        if paths:
            return _reasoned(f"{plural(len(paths), 'memory file')} to read.", tool_calls=[
                _memory_call(turn, i, run, "read_file", file_path=path) for i, path in enumerate(paths)])
    facts = recalled(request.subject, reads)
    if facts and request.subject:
        return _reasoned("My memory answers the question.",
                         "From my memory: " + "; ".join(second_person(f) for f in facts) + ".")
    if facts:
        return _reasoned("Listing what my memory holds.", "Here is what I remember about you:\n\n"
                         + "\n".join(f"- {second_person(f)}" for f in facts))
    about = f" about {second_person(request.subject)}" if request.subject else " about you"
    return _reasoned("My memory has nothing on this.",
                     f"I don't remember anything{about}: nothing in {MEMORY_ROUTE} says so. Tell me with "
                     f"\"remember that …\" and I will keep it for your next conversations.")


def _tool_answer(turn: list[BaseMessage], run: str, tool: str, args: dict) -> AIMessage | Review:
    """A subagent's one tool: the call to make (an AIMessage) while the turn has no answer, then the answer."""
    results = [m for m in turn if isinstance(m, ToolMessage)]
    if not results:
        return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": _call_id(turn, 0, run)}])
    return review_of(results[-1])


def _reviewed_call(turn: list[BaseMessage], run: str, tool: str, arg: str, value: str,
                   refusal: Callable[[str, str], str]) -> AIMessage | tuple[str, str]:
    """A subagent's one tool call on `arg` = `value`: the message to send now (the call, or what it does instead
    when a person rejected the call, from `refusal(value, why)`), or the argument as executed (an edit may have
    changed it) and the tool's answer."""
    answer = _tool_answer(turn, run, tool, {arg: value})
    if isinstance(answer, AIMessage):
        return answer
    if answer.rejected:
        return AIMessage(content=refusal(value, answer.rejection()))
    return str(answer.executed_args.get(arg, value)), answer.text


def _researcher_turn(turn: list[BaseMessage], run: str = "") -> AIMessage:
    outcome = _reviewed_call(turn, run, "search_web", "query", research_query(_text_of(turn[0])), lambda query, why: (
        f"I did not search for \"{query}\": {why}. Instead of searching, I answer without a lookup: ask again with "
        f"another query if you want one."))
    if isinstance(outcome, AIMessage):
        return outcome
    query, text = outcome
    try:
        hits = json.loads(text)["results"]
    except (ValueError, KeyError, TypeError):
        hits = []
    if not hits:
        return AIMessage(content=f"I searched for \"{query}\" but found nothing useful.")
    # Built only from what the search returned: its snippet, and its own word on whether it is a mock.
    first = hits[0]
    snippet = str(first.get("snippet", "")).strip() or "The result had no text."
    source = str(first.get("title", "search result")).strip()
    more = f" It returned {plural(len(hits), 'result')}; the first reads:" if len(hits) > 1 else ""
    return AIMessage(content=f"I searched for \"{query}\".{more} {snippet} (source: {source})")


def _math_turn(turn: list[BaseMessage], run: str = "") -> AIMessage:
    reviewed = _reviewed_call(
        turn, run, "calculator", "expression", calculation_expression(_text_of(turn[0])), lambda expression, why: (
            f"I did not calculate {expression}: {why}. Instead of calculating, I leave it unevaluated: ask again with "
            f"another expression if you want a result."))
    if isinstance(reviewed, AIMessage):
        return reviewed
    expression, outcome = reviewed[0], reviewed[1].strip()
    if outcome.startswith("Error evaluating"):
        return AIMessage(content=f"I could not evaluate {expression}: {outcome}")
    return AIMessage(content=f"{expression} = {outcome}. The calculator confirms the result is {outcome}.")

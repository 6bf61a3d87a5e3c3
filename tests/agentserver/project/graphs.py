"""The Agent Server tests' project: an echo graph and a graph with a subgraph, no model calls."""

from __future__ import annotations

import operator
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


def one_step_graph(state_type: type, step, *, name: str):
    """START -> step -> END, the node named after the step's function."""
    builder = StateGraph(state_type)
    builder.add_node(step.__name__, step)
    builder.add_edge(START, step.__name__)
    builder.add_edge(step.__name__, END)
    return builder.compile(name=name)


class EchoState(TypedDict, total=False):
    messages: Annotated[list, operator.add]
    echo: str


def echo(state: EchoState) -> EchoState:
    last = (state.get("messages") or [{}])[-1]
    text = last.get("content", "") if isinstance(last, dict) else str(last)
    return {"echo": text}


echo_graph = one_step_graph(EchoState, echo, name="echo")


class InnerState(TypedDict, total=False):
    steps: Annotated[list, operator.add]


def inner_step(state: InnerState) -> InnerState:
    return {"steps": ["inner"]}


inner_graph = one_step_graph(InnerState, inner_step, name="inner")


def outer_step(state: InnerState) -> InnerState:
    return {"steps": ["outer"]}


nested_builder = StateGraph(InnerState)
nested_builder.add_node("outer_step", outer_step)
nested_builder.add_node("child", inner_graph)
nested_builder.add_edge(START, "outer_step")
nested_builder.add_edge("outer_step", "child")
nested_builder.add_edge("child", END)
nested_graph = nested_builder.compile(name="nested")


# --- A graph that asks a human (interrupt), one that takes its time, and one with a streaming chat model -----------
class AskState(TypedDict, total=False):
    question: str
    answer: str


def ask(state: AskState) -> AskState:
    from langgraph.types import interrupt

    answer = interrupt({"question": state.get("question") or "Proceed?"})
    return {"answer": str(answer)}


interrupt_graph = one_step_graph(AskState, ask, name="asker")


class SlowState(TypedDict, total=False):
    ticks: Annotated[list, operator.add]
    steps: int
    delay: float


async def tick(state: SlowState) -> SlowState:
    import asyncio

    from langgraph.config import get_stream_writer

    write = get_stream_writer()
    done = len(state.get("ticks") or [])
    await asyncio.sleep(state.get("delay", 0.2))
    write({"tick": done + 1})
    return {"ticks": [done + 1]}


def more(state: SlowState) -> str:
    return "tick" if len(state.get("ticks") or []) < state.get("steps", 5) else END


slow_builder = StateGraph(SlowState)
slow_builder.add_node("tick", tick)
slow_builder.add_edge(START, "tick")
slow_builder.add_conditional_edges("tick", more)
slow_graph = slow_builder.compile(name="slow")


def _scripted_model(token_delay: float = 0.0):
    """A chat model that streams, word by word, the words of the last human message in reverse (no network),
    waiting `token_delay` seconds after each token (so that a browser can show the text growing)."""
    import time

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class ReverseModel(GenericFakeChatModel):
        def _stream(self, messages, stop=None, run_manager=None, **kwargs):
            text = " ".join(reversed(str(messages[-1].content).split())) or "nothing"
            self.messages = iter([AIMessage(content=text, id=f"reply-{len(messages)}")])
            for chunk in super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
                yield chunk
                time.sleep(token_delay)

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            text = " ".join(reversed(str(messages[-1].content).split())) or "nothing"
            self.messages = iter([AIMessage(content=text, id=f"reply-{len(messages)}")])
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return ReverseModel(messages=iter([]))


class ChatState(TypedDict, total=False):
    messages: Annotated[list, add_messages]


def respond(state: ChatState, config: RunnableConfig) -> ChatState:
    delay = float((config.get("configurable") or {}).get("token_delay") or 0)
    return {"messages": [_scripted_model(delay).invoke(state["messages"])]}


chat_builder = StateGraph(ChatState)
chat_builder.add_node("respond", respond)
chat_builder.add_edge(START, "respond")
chat_builder.add_edge("respond", END)
chat_graph = chat_builder.compile(name="chat")

"""Benchmark: our DjangoCheckpointSaver against LangGraph's own savers, side by side in one run.

A 30-turn conversation runs on ours and on AsyncSqliteSaver (SQLite), and on ours and on
AsyncPostgresSaver (PostgreSQL), in two scenarios, both offline and deterministic:

- `tools`: a small tool-calling agent (agent -> tools -> agent) driven by a scripted chat model;
- `deep-agent`: the chat's own deep agent (chat/agent, CHAT_GRAPH's default) with its offline
  scripted model, whose subagents checkpoint into their own namespaces; tool delays are off.

After every turn the client reads the thread's state, as the UI does. Each round runs both savers
on a fresh thread, back to back, in alternating order. The script prints wall time and process
CPU time (all threads, the savers' own included) per round, the medians, their ratio (ours /
theirs; target <= 1.25x) and the median of the per-round ratios, which cancels slow drifts in
the load of a shared machine.

    .venv/bin/python bench/checkpointer.py                      # both databases, both scenarios
    .venv/bin/python bench/checkpointer.py --backend sqlite --scenario tools --rounds 15
    .venv/bin/python bench/checkpointer.py --backend postgres --postgres-url postgres://postgres@127.0.0.1:5432/x

The PostgreSQL run uses its own database (created if missing, default `checkpointer_bench`) and
empties both savers' tables before each conversation. SQLite files go to a temporary directory
under data/, removed at the end; the peer gets the same WAL + synchronous=NORMAL as ours.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_support import bench_parser, each_backend_in_its_process, setup_django_on  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/checkpointer_bench"
SCENARIOS = ("tools", "deep-agent")


def main() -> None:
    parser = bench_parser(__doc__, postgres_url=DEFAULT_PG)
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=None, help="default: 9 for tools, 5 for deep-agent")
    args = parser.parse_args()
    if each_backend_in_its_process(args.backend):
        return
    workdir = Path(tempfile.mkdtemp(prefix="bench-checkpointer-", dir=ROOT / "data"))
    try:
        setup_django(args.backend, args.postgres_url, workdir)
        for scenario in SCENARIOS if args.scenario == "all" else [args.scenario]:
            rounds = args.rounds or (9 if scenario == "tools" else 5)
            asyncio.run(run(args.backend, scenario, args.turns, rounds, args.postgres_url, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def setup_django(backend: str, postgres_url: str, workdir: Path) -> None:
    # The deep agent offline: its scripted model, no artificial tool latency.
    os.environ["CHAT_MODEL"] = ""
    os.environ["CHAT_AGENT_DELAY_SCALE"] = "0"
    setup_django_on(backend, postgres_url=postgres_url, sqlite_path=workdir / "ours.sqlite3")
    from django.core.management import call_command

    call_command("migrate", "chat", verbosity=0)



# --- the conversations -----------------------------------------------------------------------------


def build_tools_graph(checkpointer):
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def calculator(expression: str) -> str:
        """Evaluate `a * b`."""
        left, right = expression.split("*")
        return str(int(left) * int(right))

    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return json.dumps({"topic": topic, "summary": f"{topic} is well documented. " * 8})

    class ScriptedChatModel(BaseChatModel):
        """Deterministic: asks for a tool when the turn needs one, then answers from its result."""

        @property
        def _llm_type(self) -> str:
            return "scripted-bench"

        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            last = messages[-1]
            if isinstance(last, ToolMessage):
                reply = AIMessage(f"From the tool: {last.content[:80]}")
            elif last.content.startswith(("compute", "research")):
                name, key = ("calculator", "expression") if last.content.startswith("compute") else ("lookup", "topic")
                call = {"name": name, "args": {key: last.content.split()[-1]}, "id": f"call{len(messages)}"}
                reply = AIMessage("", tool_calls=[call])
            else:
                reply = AIMessage(f"You said: {last.content}. " * 4)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    model = ScriptedChatModel()

    async def agent(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([calculator, lookup]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def build_graph(scenario: str, checkpointer):
    if scenario == "tools":
        return build_tools_graph(checkpointer)
    from chat.agent.graph import build_graph as build_deep_agent

    return build_deep_agent(checkpointer)


def prompt(scenario: str, turn: int) -> str:
    if scenario == "tools":
        return [f"compute {turn}*7", f"research topic{turn}", f"hello number {turn}"][turn % 3]
    # Both subagents in parallel, each alone, and small talk.
    return [
        f"Look up LangGraph streaming and calculate {turn} * 17",
        f"What is {turn} times 12?",
        f"Research topic{turn}",
        "thanks",
    ][turn % 4]


async def conversation(checkpointer, scenario: str, thread_id: str, turns: int) -> tuple[float, float, int]:
    """Run the conversation; returns wall time, process CPU time and the final number of messages."""
    graph = build_graph(scenario, checkpointer)
    config = {"configurable": {"thread_id": thread_id}}
    started, cpu_started = time.perf_counter(), time.process_time()
    for turn in range(turns):
        await graph.ainvoke({"messages": [("user", prompt(scenario, turn))]}, config)
        state = await graph.aget_state(config)
    return time.perf_counter() - started, time.process_time() - cpu_started, len(state.values["messages"])


# --- the savers --------------------------------------------------------------------------------------


async def run(backend: str, scenario: str, turns: int, rounds: int, postgres_url: str, workdir: Path) -> None:
    from agentruntime.checkpointer.saver import DjangoCheckpointSaver

    ours = DjangoCheckpointSaver()
    peer_name = "AsyncSqliteSaver" if backend == "sqlite" else "AsyncPostgresSaver"
    wall: dict[str, list[float]] = {"ours": [], peer_name: []}
    cpu: dict[str, list[float]] = {"ours": [], peer_name: []}
    print(
        f"[{backend} {scenario}] {turns}-turn conversation, {rounds} rounds (+1 warm-up); ours = DjangoCheckpointSaver"
    )
    for n in range(rounds + 1):
        order = ["ours", peer_name] if n % 2 == 0 else [peer_name, "ours"]
        for who in order:
            await clear_ours()
            if who == "ours":
                elapsed, cpu_time, messages = await conversation(ours, scenario, f"bench-{n}", turns)
            else:
                async with peer(backend, postgres_url, workdir / f"peer-{scenario}-{n}.sqlite3") as saver:
                    elapsed, cpu_time, messages = await conversation(saver, scenario, f"bench-{n}", turns)
            if n > 0:
                wall[who].append(elapsed)
                cpu[who].append(cpu_time)
            label = "warm-up" if n == 0 else f"round {n}"
            print(
                f"  {label:8} {who:18} wall {elapsed * 1000:7.1f} ms  cpu {cpu_time * 1000:7.1f} ms  ({messages} msgs)"
            )
    ours.close()
    for metric, series in (("wall", wall), ("cpu", cpu)):
        mine, theirs = statistics.median(series["ours"]), statistics.median(series[peer_name])
        # Each round runs both back to back, so its own ratio cancels slow drifts in machine load.
        paired = statistics.median(a / b for a, b in zip(series["ours"], series[peer_name], strict=True))
        print(
            f"[{backend} {scenario}] {metric}: median ours {mine * 1000:.1f} ms, {peer_name} {theirs * 1000:.1f} ms, "
            f"ratio {mine / theirs:.2f}x; median of per-round ratios {paired:.2f}x (target <= 1.25x)"
        )


async def clear_ours() -> None:
    from django.db import connections

    from agentruntime.models import Checkpoint, CheckpointBlob, CheckpointWrite

    def clear() -> None:
        try:
            for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
                model.objects.all().delete()
        finally:
            connections.close_all()

    await asyncio.to_thread(clear)


class peer:
    """The LangGraph saver for the database, on an empty store."""

    def __init__(self, backend: str, postgres_url: str, sqlite_path: Path) -> None:
        self.backend, self.postgres_url, self.sqlite_path = backend, postgres_url, sqlite_path

    async def __aenter__(self):
        if self.backend == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            self.context = AsyncSqliteSaver.from_conn_string(str(self.sqlite_path))
            saver = await self.context.__aenter__()
            await saver.setup()
            # Same durability as ours (config/settings.py): WAL with synchronous=NORMAL.
            await saver.conn.execute("PRAGMA synchronous=NORMAL")
            return saver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        self.context = AsyncPostgresSaver.from_conn_string(self.postgres_url)
        saver = await self.context.__aenter__()
        await saver.setup()
        await saver.conn.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        return saver

    async def __aexit__(self, *exc_info) -> None:
        await self.context.__aexit__(*exc_info)


if __name__ == "__main__":
    main()

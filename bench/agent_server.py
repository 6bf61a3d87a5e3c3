"""Agent Server runs: ours (`manage.py serve_graphs`) against Aegra and LangChain's `langgraph dev`.

One run of this script starts every server it is asked for (`--servers`) on the same project
(tests/agentserver/project: graphs `echo` and `chat`) and drives them, scenario by scenario and alternating the order
per repetition, with the official LangGraph Python SDK's async client (`langgraph_sdk.get_client`):

* runs.wait: `POST /runs/wait` on `echo` by C concurrent callers (C = 1, 10, 50), each checking the answer; runs/s,
  p50 and p99 latency. Stateless (`runs.wait(None, …)`) where the server has it; Aegra 0.6.0 has no stateless
  routes, so it gets `runs.wait(<new thread id>, …)`, which creates the thread (the closest it has);
* runs.stream (`--stream`): `POST /runs/stream` (`stream_mode="messages-tuple"`) on `chat`, whose scripted model
  answers the words of the input reversed, one chunk per word and per space: 1,000 words give 1,999 token chunks;
  time to first token, total time and tokens/s, every answer checked;
* per scenario, each server's CPU time (utime + stime of all its process trees, from /proc) per run or per token
  (and the system time's share of it), and its peak RSS (VmHWM summed over its process trees, i.e. since start,
  read after each scenario).

The servers (`--servers`, comma-separated):

* `ours-pg1`, `ours-pg2`: ours as a deployed revision runs (the serving settings and environment of
  deployments/environment.py, DEBUG off, anonymous callers, no tracing) on a PostgreSQL database of its own
  (`bench_ours_1p`, `bench_ours_2p`, dropped and created anew per run), with 1 or 2 `serve_graphs` processes, each a
  Daphne process with the embedded run executor (CHAT_RUN_CONCURRENCY 10). With 2 the client balances round-robin
  over their ports (a deployment's proxy balances too);
* `ours-sqlite`: the same with one process on an SQLite file of its own (the revision of before issue #25);
* `aegra`: Aegra (aegra-api 0.6.0, `aegra serve`, i.e. one uvicorn process) from data/aegra-peer/venv
  (bench/install_agent_server_peers.sh), on its own PostgreSQL database `bench_aegra`, noop auth, no observability
  targets, JSON logs at WARNING (as ours, it logs nothing per run);
* `langgraph-dev`: `langgraph dev` in-memory from data/langgraph-peer/venv (scripts/test-deps.d/40-langgraph-dev.sh)
  with `--no-reload` (one process), offline (../shared/reference/peer-langgraph-dev.md), `--n-jobs-per-worker 10`
  so that it executes up to 10 runs at once like the others (its `dev` default is 1: `--peer-jobs 1`).

`--floor` first measures LangGraph's own `invoke` of the `echo` graph in this process (CPU ms per call, with an
InMemorySaver and without a checkpointer). `--profile-runs N` finally profiles `ours-pg1` (or the first `ours-*`)
under N more runs at C = 10 with py-spy (`record --gil`, attached by pid, so serve_graphs runs unchanged) and prints
where its GIL-holding time goes.

    .venv/bin/python bench/agent_server.py [--reps 2] [--concurrency 1,10,50] [--stream]
        [--servers ours-pg1,ours-pg2,aegra,langgraph-dev] [--floor] [--profile-runs 1000] [--ports 18600-18699]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from bench_support import recreate_database, stop_process_group  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "agentserver" / "project"
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SERVER_NAMES = ("ours-pg1", "ours-pg2", "ours-sqlite", "aegra", "langgraph-dev")
PEERS = ("aegra", "langgraph-dev")
# The targets for ours against Aegra, both on PostgreSQL (wait at C = 10): metric, bound, the better side.
TARGETS = (("runs_per_s", 3.0, "≥"), ("p99_ms", 0.5, "≤"), ("cpu_ms_per_run", 0.5, "≤"))


# --- Process tree accounting (/proc: psutil is not installed here) ------------------------------------------------
def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return found


def process_tree(pid: int) -> list[int]:
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += _children(current)
    return tree


def cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) seconds of the tree, each with what its reaped children used (utime + cutime, stime +
    cstime)."""
    user = system = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = [int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]]
        except OSError:
            continue
        user += fields[0] + fields[2]
        system += fields[1] + fields[3]
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def peak_rss_mib(pid: int) -> float:
    """VmHWM (peak resident set since start) summed over the tree."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
        except OSError:
            continue
    return total / 1024


# --- Servers -------------------------------------------------------------------------------------------------------
@dataclass
class Server:
    """One server under test: one or more processes (each with its URL) serving the same data."""

    name: str
    urls: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    health_path: str = "/ok"
    stateless: bool = True  # has `POST /runs/wait` without a thread

    def cpu_times(self) -> tuple[float, float]:
        times = [cpu_times(p.pid) for p in self.processes]
        return sum(user for user, _ in times), sum(system for _, system in times)

    def peak_rss_mib(self) -> float:
        return sum(peak_rss_mib(p.pid) for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            stop_process_group(process)


def port_in(low: int, high: int, taken: set[int]) -> int:
    for port in range(low, high + 1):
        if port in taken:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise SystemExit(f"no free port in {low}-{high}")


def wait_ok(server: Server, index: int, timeout: float = 120) -> None:
    """Wait until process `index` of the server answers its health check."""
    process, url, log = server.processes[index], server.urls[index], server.logs[index]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{server.name} exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}{server.health_path}", timeout=1, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{server.name} did not answer in {timeout}s:\n{log.read_text()[-3000:]}")


def spawn(server: Server, command: list[str], *, cwd: Path, env: dict[str, str], port: int, log: Path) -> None:
    with open(log, "wb") as out:
        server.processes.append(subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                                 start_new_session=True))
    server.urls.append(f"http://127.0.0.1:{port}")
    server.logs.append(log)


def start_langgraph_dev(servers: list[Server], langgraph: Path, work: Path, port: int, jobs: int) -> Server:
    project = work / "peer-project"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, **OFFLINE}
    for name in ("LANGSMITH_API_KEY", "LANGGRAPH_API_KEY", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    server = Server("langgraph-dev")
    servers.append(server)
    spawn(server, [str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
                   "--n-jobs-per-worker", str(jobs)], cwd=project, env=env, port=port, log=work / "peer.log")
    wait_ok(server, 0)
    return server


def start_aegra(servers: list[Server], aegra: Path, work: Path, port: int, database_url: str,
                extra_env: dict[str, str]) -> Server:
    """`aegra serve` (uvicorn, one process) on the project, on a fresh database of its own.

    Aegra imports a graph file under a module name it does not register in sys.modules, so the project's
    graphs.py (`from __future__ import annotations`, TypedDict states) fails there with "name 'Annotated' is not
    defined": its aegra.json points at a one-line module that imports the same graphs from `graphs` (the project
    directory is on sys.path through `dependencies`)."""
    project = work / "aegra-project"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "aegra_graphs.py").write_text("from graphs import chat_graph, echo_graph  # noqa: F401\n")
    (project / "aegra.json").write_text(json.dumps({"dependencies": ["."], "graphs": {
        "echo": "./aegra_graphs.py:echo_graph", "chat": "./aegra_graphs.py:chat_graph"}}))
    recreate_database(database_url)
    env = {**os.environ, "DATABASE_URL": database_url, "AUTH_TYPE": "noop", "ENV_MODE": "PRODUCTION",
           "LOG_LEVEL": "WARNING", "OTEL_TARGETS": "", "PYTHONUNBUFFERED": "1", **extra_env}
    for name in ("DJANGO_SETTINGS_MODULE", "LANGSMITH_API_KEY", "REDIS_URL", "SQLITE_PATH", "TEST_DB_SUFFIX"):
        env.pop(name, None)
    server = Server("aegra", health_path="/health", stateless=False)
    servers.append(server)
    spawn(server, [str(aegra), "serve", "--host", "127.0.0.1", "--port", str(port), "--config", "aegra.json"],
          cwd=project, env=env, port=port, log=work / "aegra.log")
    wait_ok(server, 0)
    return server


def start_ours(servers: list[Server], name: str, work: Path, ports: list[int], *, database_url: str | None,
               redis_url: str | None) -> Server:
    """Append to `servers` and start, as deployments/environment.py's serving_env starts a revision (no token:
    nothing but us on loopback), on `database_url` (PostgreSQL) or else on an SQLite file; one process per port,
    started one after the other (the first migrates the database)."""
    from cryptography.fernet import Fernet

    data_dir = work / f"{name}-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "DEBUG": "false",
           "SECRET_KEY": secrets.token_urlsafe(48), "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
           "DATA_DIR": str(data_dir), "ALLOWED_HOSTS": "127.0.0.1,localhost",
           "SECURE_SSL_REDIRECT": "false", "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_TRACING_PROJECT": "",
           "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1", "LANGSMITH_TRACING": "false"}
    for variable in ("TEST_DB_SUFFIX", "DATABASE_URL", "SQLITE_PATH", "REDIS_URL", "LANGSMITH_API_KEY",
                     "SERVE_GRAPHS_TOKEN"):
        env.pop(variable, None)
    if database_url:
        recreate_database(database_url)
        env["DATABASE_URL"] = database_url
    else:
        env["SQLITE_PATH"] = str(data_dir / "db.sqlite3")
    if redis_url:
        env.update({"REDIS_URL": redis_url, "REDIS_KEY_PREFIX": f"bench-{name}-{secrets.token_hex(4)}"})
    server = Server(name)
    servers.append(server)
    for index, port in enumerate(ports):
        spawn(server, [sys.executable, "manage.py", "serve_graphs", "--config", str(PROJECT / "langgraph.json"),
                       "--port", str(port)],
              cwd=ROOT, env={**env, "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}, port=port,
              log=work / f"{name}-{index}.log")
        wait_ok(server, index)
    return server


def start_servers(args, servers: list[Server]) -> None:
    """Start the servers one after the other, each answering before the next starts, into `servers` (which the
    caller stops, also when one fails to start)."""
    low, high = (int(p) for p in args.ports.split("-"))
    pg = args.postgres_url.rstrip("/")
    taken: set[int] = set()
    for name in args.servers:
        if name == "langgraph-dev":
            server = start_langgraph_dev(servers, args.peer, args.work, port_in(low, high, taken), args.peer_jobs)
        elif name == "aegra":
            server = start_aegra(servers, args.aegra, args.work, port_in(low, high, taken), f"{pg}/bench_aegra",
                                 dict(item.split("=", 1) for item in args.aegra_env))
        elif name == "ours-sqlite":
            server = start_ours(servers, name, args.work, [port_in(low, high, taken)], database_url=None,
                                redis_url=args.ours_redis_url)
        else:
            count = int(name[-1])
            server = start_ours(servers, name, args.work, [port_in(low, high, taken) for _ in range(count)],
                                database_url=f"{pg}/bench_ours_{count}p", redis_url=args.ours_redis_url)
        print(f"# {server.name}: {', '.join(server.urls)} (pids {[p.pid for p in server.processes]})", flush=True)


# --- Scenarios -----------------------------------------------------------------------------------------------------
def clients_for(server: Server) -> list:
    """One SDK client per process of the server: calls go round-robin over them, as a balancing proxy would."""
    from langgraph_sdk import get_client

    # httpx's default pool (100 connections) is enough for 50 callers; the pool timeout is not what is measured.
    # (connect, read, write, pool) seconds
    return [get_client(url=url, api_key=None, timeout=(10, 120, 120, 120)) for url in server.urls]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def thread_for(server: Server) -> str | None:
    """None (a stateless run) where the server has stateless runs, else a new thread that the run creates."""
    return None if server.stateless else str(uuid.uuid4())


async def runs_wait(server: Server, concurrency: int, total: int) -> dict:
    clients = clients_for(server)
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(total))

    async def caller() -> None:
        for i in counter:
            text = f"hello {i}"
            client = clients[i % len(clients)]
            began = time.perf_counter()
            try:
                result = await client.runs.wait(thread_for(server), "echo",
                                                input={"messages": [{"role": "human", "content": text}]})
            except Exception as exc:  # counted and shown, never hidden
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            latencies.append(time.perf_counter() - began)
            if not isinstance(result, dict) or result.get("echo") != text:
                errors.append(f"wrong answer: {str(result)[:200]}")

    try:
        began = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        wall = time.perf_counter() - began
    finally:
        for client in clients:
            await client.aclose()
    return {"runs": len(latencies), "errors": errors[:3], "error_count": len(errors), "wall_s": wall,
            "runs_per_s": len(latencies) / wall, "p50_ms": percentile(latencies, 0.5) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3}


async def runs_stream(server: Server, words: int) -> dict:
    client = clients_for(server)[0]
    sentence = " ".join(f"w{i}" for i in range(words))
    expected = " ".join(reversed(sentence.split()))
    try:
        began = time.perf_counter()
        first = None
        tokens, text = 0, []
        async for part in client.runs.stream(thread_for(server), "chat",
                                             input={"messages": [{"role": "human", "content": sentence}]},
                                             stream_mode="messages-tuple"):
            if part.event != "messages":
                continue
            chunk = part.data[0] if isinstance(part.data, list) and part.data else {}
            content = chunk.get("content") if isinstance(chunk, dict) else None
            if content:
                first = first or time.perf_counter()
                tokens += 1
                text.append(content)
        total = time.perf_counter() - began
    finally:
        await client.aclose()
    ok = "".join(text) == expected
    return {"tokens": tokens, "ok": ok, "ttft_ms": ((first or began) - began) * 1e3, "total_s": total,
            "tokens_per_s": tokens / total}


def measured(server: Server, scenario, *args) -> dict:
    user0, system0 = server.cpu_times()
    result = asyncio.run(scenario(server, *args))
    user1, system1 = server.cpu_times()
    result["cpu_s"] = user1 - user0 + system1 - system0
    result["system_share"] = (system1 - system0) / result["cpu_s"] if result["cpu_s"] else 0.0
    result["peak_rss_mib"] = server.peak_rss_mib()
    result["load"] = os.getloadavg()[0]
    return result


# --- The floor: LangGraph's own invoke of the echo graph, in this process -----------------------------------------
def floor(calls: int) -> dict[str, float]:
    """CPU ms per `invoke` of the echo graph: without a checkpointer, and with an InMemorySaver (a new thread per
    call, as a stateless run has)."""
    from langgraph.checkpoint.memory import InMemorySaver

    sys.path.insert(0, str(PROJECT))
    import graphs  # type: ignore[import-not-found]  # the project's module, as every server imports it

    plain = graphs.echo_graph
    saved = plain.builder.compile(checkpointer=InMemorySaver(), name="echo")
    result = {}
    for label, graph, config in (("no checkpointer", plain, lambda i: None),
                                 ("InMemorySaver", saved, lambda i: {"configurable": {"thread_id": f"t{i}"}})):
        for i in range(50):  # warm-up
            graph.invoke({"messages": [{"role": "human", "content": "w"}]}, config(-i - 1))
        began = time.process_time()
        for i in range(calls):
            answer = graph.invoke({"messages": [{"role": "human", "content": f"hello {i}"}]}, config(i))
            assert answer["echo"] == f"hello {i}"
        result[label] = (time.process_time() - began) / calls * 1e3
    return result


# --- Profile of ours under load (py-spy, attached: serve_graphs runs unchanged) -----------------------------------
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# The place of a sample's innermost frame: by installed package (site-packages/<package>), our code's top directory,
# or the standard library's module. Packages that belong together share a label.
PACKAGE_PLACES = {
    "psycopg": "psycopg (PostgreSQL driver)", "psycopg_binary": "psycopg (PostgreSQL driver)",
    "psycopg_pool": "psycopg (PostgreSQL driver)", "django": "Django (request handling, signals, utilities)",
    "rest_framework": "DRF", "asgiref": "asgiref (sync/async hand-offs)", "langgraph": "LangGraph",
    "langchain_core": "langchain_core", "daphne": "Daphne, Twisted (HTTP)", "twisted": "Daphne, Twisted (HTTP)",
    "autobahn": "Daphne, Twisted (HTTP)", "channels": "channels", "ormsgpack": "LangGraph",
}
STDLIB_PLACES = {"asyncio": "asyncio event loop", "selectors.py": "asyncio event loop",
                 "concurrent": "thread pools, queues, locks", "threading.py": "thread pools, queues, locks",
                 "queue.py": "thread pools, queues, locks"}
OUR_DIRS = ("agentserver", "chat", "core", "deployments", "accounts")


def our_frame(path: str) -> str | None:
    """`path` relative to the repository when it is our code, else None."""
    if not path.startswith(f"{ROOT}/"):
        return None
    relative = path[len(str(ROOT)) + 1:]
    return relative if relative.split("/", 1)[0] in OUR_DIRS else None


def place_of(path: str) -> str:
    mine = our_frame(path)
    if mine:
        return f"our code: {mine.split('/', 1)[0]}/"
    if "site-packages/" in path:
        package = path.split("site-packages/", 1)[1].split("/", 1)[0]
        if package == "django" and "/django/db/" in path:
            return "Django ORM and db backend"
        return PACKAGE_PLACES.get(package, package)
    module = path.split("/lib/python3.11/", 1)[-1].split("/", 1)[0]
    return STDLIB_PLACES.get(module, f"stdlib: {module}")


def parse_stacks(raw: str) -> list[tuple[list[tuple[str, str]], int]]:
    stacks = []
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = []
        for text in stack.split(";"):
            match = FRAME.match(text.strip())
            if match:
                frames.append((match["func"], match["file"]))
        if frames:
            stacks.append((frames, int(count)))
    return stacks


def summarise_profile(raw: str, runs: int, rate: int, top: int = 20) -> str:
    stacks = parse_stacks(raw)
    total = sum(count for _, count in stacks)
    if not total:
        return "no samples"
    ms_per_run = total / rate / runs * 1e3
    lines = [f"{total} GIL-holding samples at {rate} Hz over {runs} runs: {ms_per_run:.2f} ms of GIL time per run",
             "", "Where the innermost frame is (self time):", "", "| part | ms/run | share |", "|---|---|---|"]
    parts: Counter[str] = Counter()
    for frames, count in stacks:
        parts[place_of(frames[-1][1])] += count
    small = [label for label, count in parts.items() if count / total < 0.01]
    if len(small) > 1:  # below 1 % each: one row
        parts[f"{len(small)} other places, each below 1 %"] = sum(parts.pop(label) for label in small)
    for label, count in parts.most_common():
        lines.append(f"| {label} | {count / total * ms_per_run:.2f} | {count / total:.0%} |")
    inclusive: Counter[str] = Counter()
    for frames, count in stacks:
        # serve_graphs' own frames hold the event loop, i.e. everything on the main thread: left out.
        seen = {f"{our_frame(path)}:{func}" for func, path in frames
                if our_frame(path) and not path.endswith("serve_graphs.py")}
        for key in seen:
            inclusive[key] += count
    lines += ["", f"Our functions by inclusive time (top {top}; nested ones overlap):", "",
              "| function | ms/run | share |", "|---|---|---|"]
    for key, count in inclusive.most_common(top):
        lines.append(f"| `{key}` | {count / total * ms_per_run:.2f} | {count / total:.0%} |")
    return "\n".join(lines)


def profile_ours(server: Server, args) -> None:
    if not args.py_spy.exists():
        raise SystemExit(f"{args.py_spy} is missing: run bench/install_agent_server_peers.sh")
    out = args.work / f"profile-{server.name}.txt"
    pids = [str(p.pid) for p in server.processes]
    rate = 100
    spy = subprocess.Popen([str(args.py_spy), "record", "--gil", "--rate", str(rate), "--format", "raw",
                            "--full-filenames", "--output", str(out), "--pid", pids[0]],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(2)  # py-spy attaches
    result = measured(server, runs_wait, 10, args.profile_runs)
    spy.send_signal(signal.SIGINT)
    _, err = spy.communicate(timeout=60)
    if not out.exists():
        raise SystemExit(f"py-spy wrote no profile: {err.decode()[-2000:]}")
    runs = result["runs"] if len(pids) == 1 else result["runs"] // len(pids)
    print(f"\n## Profile of {server.name} (process {pids[0]}), py-spy record --gil, {result['runs']} runs at C = 10 "
          f"({result['runs_per_s']:.1f} runs/s under the profiler, CPU {result['cpu_s'] / result['runs'] * 1e3:.2f} "
          f"ms/run, load {result['load']:.1f}); raw stacks in {out}\n", flush=True)
    print(summarise_profile(out.read_text(), runs, rate), flush=True)


# --- Driver --------------------------------------------------------------------------------------------------------
def run_rep(servers: list[Server], args, rep: int, out) -> dict[str, dict[str, dict]]:
    """One repetition of every scenario; the servers take turns going first (rep parity)."""
    order = servers if rep % 2 == 0 else list(reversed(servers))
    rows: dict[str, dict[str, dict]] = {s.name: {} for s in servers}
    for concurrency in args.concurrency:
        total = max(args.min_runs, args.runs_per_caller * concurrency)
        for server in order:
            result = measured(server, runs_wait, concurrency, total)
            result["cpu_ms_per_run"] = result["cpu_s"] / max(1, result["runs"]) * 1e3
            rows[server.name][f"wait c={concurrency}"] = result
            report(out, rep, server, f"wait c={concurrency}", result)
            time.sleep(1)
    for server in order if args.stream else ():
        samples = [measured(server, runs_stream, args.words) for _ in range(args.stream_reps)]
        result = {key: statistics.median(s[key] for s in samples)
                  for key in ("tokens", "ttft_ms", "total_s", "tokens_per_s", "cpu_s", "load")}
        result["ok"] = all(s["ok"] for s in samples)
        result["peak_rss_mib"] = samples[-1]["peak_rss_mib"]
        result["cpu_us_per_token"] = result["cpu_s"] / max(1, result["tokens"]) * 1e6
        rows[server.name]["stream"] = result
        report(out, rep, server, "stream", result)
    return rows


def report(out, rep: int, server: Server, scenario: str, result: dict) -> None:
    out.write(json.dumps({"rep": rep, "server": server.name, "scenario": scenario, **result}) + "\n")
    out.flush()
    if scenario == "stream":
        line = (f"TTFT {result['ttft_ms']:7.1f} ms  total {result['total_s']:6.2f} s  "
                f"{result['tokens_per_s']:7.0f} tok/s  {result['tokens']:.0f} tokens "
                f"{'ok' if result['ok'] else 'WRONG'}"
                f"  CPU {result['cpu_us_per_token']:6.0f} µs/token")
    else:
        line = (f"{result['runs_per_s']:7.1f} runs/s  p50 {result['p50_ms']:7.1f} ms  p99 {result['p99_ms']:7.1f} ms"
                f"  CPU {result['cpu_ms_per_run']:6.2f} ms/run ({result['system_share']:.0%} system)"
                f"  errors {result['error_count']}")
        if result["errors"]:
            line += f" (first: {result['errors'][0]})"
    print(f"  rep {rep} {server.name:14s} {scenario:10s} {line}  peak RSS {result['peak_rss_mib']:5.0f} MiB  "
          f"load {result['load']:.1f}", flush=True)


def metrics_of(scenario: str) -> tuple[tuple[str, str], ...]:
    if scenario == "stream":
        return (("tokens_per_s", "tokens/s"), ("ttft_ms", "TTFT ms"), ("total_s", "total s"),
                ("cpu_us_per_token", "server CPU µs/token"), ("peak_rss_mib", "peak RSS MiB"))
    return (("runs_per_s", "runs/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"),
            ("cpu_ms_per_run", "server CPU ms/run"), ("peak_rss_mib", "peak RSS MiB"))


def print_table(rows: dict[str, dict[str, dict]], rep: int) -> None:
    names = list(rows)
    ours = [n for n in names if n.startswith("ours")]
    ratios = [(o, p) for p in PEERS if p in rows for o in ours]
    print(f"\n### rep {rep}\n")
    print("| " + " | ".join(["scenario", "metric", *names, *(f"{o} ÷ {p}" for o, p in ratios)]) + " |")
    print("|---|---|" + "---|" * (len(names) + len(ratios)))
    for scenario in rows[names[0]]:
        for key, label in metrics_of(scenario):
            values = [f"{rows[n][scenario][key]:,.1f}" for n in names]
            cells = [f"{rows[o][scenario][key] / rows[p][scenario][key]:.2f}×" if rows[p][scenario][key] else "–"
                     for o, p in ratios]
            print("| " + " | ".join([scenario, label, *values, *cells]) + " |")
    if "aegra" in rows and "wait c=10" in rows["aegra"]:
        print("\nTargets against Aegra at C = 10:")
        for name in ours:
            verdicts = []
            for key, bound, sense in TARGETS:
                ratio = rows[name]["wait c=10"][key] / rows["aegra"]["wait c=10"][key]
                met = ratio >= bound if sense == "≥" else ratio <= bound
                verdicts.append(f"{key} {ratio:.2f}× ({sense} {bound}×: {'met' if met else 'NOT met'})")
            print(f"  {name}: " + "; ".join(verdicts))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=lambda s: s.split(","), default=["ours-pg1", "ours-pg2", "aegra",
                                                                             "langgraph-dev"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 50])
    parser.add_argument("--runs-per-caller", type=int, default=10, help="runs.wait calls per concurrent caller")
    parser.add_argument("--min-runs", type=int, default=40, help="at least this many runs.wait calls per level")
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=False,
                        help="also the runs.stream scenario")
    parser.add_argument("--words", type=int, default=1000, help="words in the streamed answer (tokens ≈ 2× words)")
    parser.add_argument("--stream-reps", type=int, default=3, help="streams per server per rep (median)")
    parser.add_argument("--floor", action="store_true", help="first measure LangGraph's own invoke of echo")
    parser.add_argument("--floor-calls", type=int, default=2000)
    parser.add_argument("--profile-runs", type=int, default=0, help="then profile ours under this many runs")
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432",
                        help="the server on which the bench_* databases are dropped and created")
    parser.add_argument("--ours-redis-url", default=None, help="REDIS_URL for ours (cross-process wake-ups)")
    parser.add_argument("--peer", type=Path, default=ROOT / "data" / "langgraph-peer" / "venv" / "bin" / "langgraph")
    parser.add_argument("--peer-jobs", type=int, default=10, help="langgraph dev --n-jobs-per-worker")
    parser.add_argument("--aegra", type=Path, default=ROOT / "data" / "aegra-peer" / "venv" / "bin" / "aegra")
    parser.add_argument("--aegra-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for Aegra, e.g. SQLALCHEMY_POOL_SIZE=10")
    parser.add_argument("--py-spy", type=Path, default=ROOT / "data" / "bench-tools" / "venv" / "bin" / "py-spy")
    parser.add_argument("--ports", default="18600-18699")
    parser.add_argument("--work", type=Path, default=ROOT / "data" / "bench" / "agent_server")
    parser.add_argument("--json-out", type=Path, default=ROOT / "data" / "bench" / "agent_server.jsonl")
    args = parser.parse_args()
    unknown = set(args.servers) - set(SERVER_NAMES)
    if unknown:
        parser.error(f"unknown servers {sorted(unknown)}: choose from {', '.join(SERVER_NAMES)}")
    for name, path, installer in (("langgraph-dev", args.peer, "scripts/test-deps.d/40-langgraph-dev.sh"),
                                  ("aegra", args.aegra, "bench/install_agent_server_peers.sh")):
        if name in args.servers and not path.exists():
            parser.error(f"{path} is missing: run {installer}")
    return args


def main() -> None:
    args = parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    print(f"# `uptime` at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    if args.floor:
        costs = floor(args.floor_calls)
        print("# floor, LangGraph's own invoke of echo in this process: "
              + ", ".join(f"{label} {ms:.3f} ms CPU/call" for label, ms in costs.items()), flush=True)
    servers: list[Server] = []
    try:
        start_servers(args, servers)
        for server in servers:  # warm-up: imports, first-run caches, both graphs
            asyncio.run(runs_wait(server, 2, 10))
            if args.stream:
                asyncio.run(runs_stream(server, 50))
        print("# idle after warm-up: " + ", ".join(f"{s.name} RSS peak {s.peak_rss_mib():.0f} MiB"
                                                    for s in servers), flush=True)
        with open(args.json_out, "a") as out:
            for rep in range(args.reps):
                rows = run_rep(servers, args, rep, out)
                print_table(rows, rep)
                print(f"\n`uptime`: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}\n",
                      flush=True)
        profiled = next((s for s in servers if s.name.startswith("ours")), None)
        if args.profile_runs and profiled:
            profile_ours(profiled, args)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()

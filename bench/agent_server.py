"""Agent Server runs: ours (`manage.py serve_graphs`) against LangChain's local Agent Server (`langgraph dev`).

One run of this script starts both servers on the same project (tests/agentserver/project: graphs `echo` and
`chat`) and drives them, scenario by scenario and alternating which goes first, with the official LangGraph Python
SDK's async client (`langgraph_sdk.get_client`):

* runs.wait: stateless `POST /runs/wait` on `echo` by C concurrent callers (C = 1, 10, 50), each checking the
  answer; runs/s, p50 and p99 latency;
* runs.stream: stateless `POST /runs/stream` (`stream_mode="messages-tuple"`) on `chat`, whose scripted model
  answers the words of the input reversed, one chunk per word and per space: 1,000 words give 1,999 token chunks;
  time to first token, total time and tokens/s (token chunks ÷ total time), every answer checked;
* per scenario, each server's CPU time (utime + stime of its process tree, from /proc) per run or per token, and
  its peak RSS (VmHWM of its process tree, i.e. since start, read after each scenario).

Ours runs as a deployed revision runs it: `serve_graphs` with the serving settings and environment of
deployments/environment.py (SQLite database of its own, DEBUG off, anonymous callers, no tracing), one Daphne
process with the embedded run executor (CHAT_RUN_CONCURRENCY 10). The peer runs in-memory with `--no-reload` (one
process) and offline (../shared/reference/peer-langgraph-dev.md); it is given `--n-jobs-per-worker 10` by default so
both execute up to 10 runs at once (`langgraph dev`'s own default is 1: pass `--peer-jobs 1` to measure that).

    .venv/bin/python bench/agent_server.py [--reps 2] [--concurrency 1,10,50] [--words 1000]
        [--peer data/langgraph-peer/venv/bin/langgraph] [--ports 18600-18699]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from bench_support import stop_process_group  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "agentserver" / "project"
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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


def cpu_seconds(pid: int) -> float:
    """utime + stime of the tree, plus what its reaped children used (cutime + cstime of each)."""
    total = 0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / CLOCK_TICKS


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
    name: str
    url: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        stop_process_group(self.process)


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


def wait_ok(server: Server, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise SystemExit(f"{server.name} exited ({server.process.returncode}):\n{server.log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{server.url}/ok", timeout=1, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{server.name} did not answer in {timeout}s:\n{server.log.read_text()[-3000:]}")


def start_peer(langgraph: Path, work: Path, port: int, jobs: int) -> Server:
    project = work / "peer-project"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, **OFFLINE}
    for name in ("LANGSMITH_API_KEY", "LANGGRAPH_API_KEY", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    log = work / "peer.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
                                    "--port", str(port), "--n-jobs-per-worker", str(jobs)],
                                   cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Server("langgraph dev", f"http://127.0.0.1:{port}", process, log)


def start_ours(work: Path, port: int) -> Server:
    """As deployments/environment.py's serving_env starts a revision (no token: nothing but us on loopback)."""
    from cryptography.fernet import Fernet

    data_dir = work / "ours-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "DEBUG": "false",
           "SECRET_KEY": secrets.token_urlsafe(48), "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
           "DATA_DIR": str(data_dir), "SQLITE_PATH": str(data_dir / "db.sqlite3"),
           "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}", "ALLOWED_HOSTS": "127.0.0.1,localhost",
           "SECURE_SSL_REDIRECT": "false", "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_TRACING_PROJECT": "",
           "LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1", "LANGSMITH_TRACING": "false"}
    for name in ("TEST_DB_SUFFIX", "DATABASE_URL", "REDIS_URL", "LANGSMITH_API_KEY", "SERVE_GRAPHS_TOKEN"):
        env.pop(name, None)
    log = work / "ours.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "manage.py", "serve_graphs", "--config",
                                    str(PROJECT / "langgraph.json"), "--port", str(port)],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Server("ours", f"http://127.0.0.1:{port}", process, log)


# --- Scenarios -----------------------------------------------------------------------------------------------------
def client_for(server: Server, concurrency: int):
    from langgraph_sdk import get_client

    # httpx's default pool (100 connections) is enough for 50 callers; the pool timeout is not what is measured.
    return get_client(url=server.url, api_key=None, timeout=httpx.Timeout(120, connect=10, pool=120))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def runs_wait(server: Server, concurrency: int, total: int) -> dict:
    client = client_for(server, concurrency)
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(total))

    async def caller() -> None:
        for i in counter:
            text = f"hello {i}"
            began = time.perf_counter()
            try:
                result = await client.runs.wait(None, "echo", input={"messages": [{"role": "human",
                                                                                   "content": text}]})
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
        await client.aclose()
    return {"runs": len(latencies), "errors": errors[:3], "error_count": len(errors), "wall_s": wall,
            "runs_per_s": len(latencies) / wall, "p50_ms": percentile(latencies, 0.5) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3}


async def runs_stream(server: Server, words: int) -> dict:
    client = client_for(server, 1)
    sentence = " ".join(f"w{i}" for i in range(words))
    expected = " ".join(reversed(sentence.split()))
    try:
        began = time.perf_counter()
        first = None
        tokens, text = 0, []
        async for part in client.runs.stream(None, "chat", input={"messages": [{"role": "human",
                                                                                "content": sentence}]},
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
    cpu0 = cpu_seconds(server.process.pid)
    result = asyncio.run(scenario(server, *args))
    result["cpu_s"] = cpu_seconds(server.process.pid) - cpu0
    result["peak_rss_mib"] = peak_rss_mib(server.process.pid)
    result["load"] = os.getloadavg()[0]
    return result


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
    for server in order:
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
                f"  CPU {result['cpu_ms_per_run']:6.2f} ms/run  errors {result['error_count']}")
    print(f"  rep {rep} {server.name:14s} {scenario:10s} {line}  peak RSS {result['peak_rss_mib']:5.0f} MiB  "
          f"load {result['load']:.1f}", flush=True)


def print_table(rows: dict[str, dict[str, dict]], rep: int) -> None:
    peer, ours = rows["langgraph dev"], rows["ours"]
    print(f"\n### rep {rep}\n")
    print("| scenario | metric | langgraph dev | ours | ours ÷ peer |")
    print("|---|---|---|---|---|")
    for scenario in peer:
        metrics = (("tokens_per_s", "tokens/s"), ("ttft_ms", "TTFT ms"), ("total_s", "total s"),
                   ("cpu_us_per_token", "server CPU µs/token"), ("peak_rss_mib", "peak RSS MiB")) \
            if scenario == "stream" else \
            (("runs_per_s", "runs/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"),
             ("cpu_ms_per_run", "server CPU ms/run"), ("peak_rss_mib", "peak RSS MiB"))
        for key, label in metrics:
            theirs, mine = peer[scenario][key], ours[scenario][key]
            ratio = f"{mine / theirs:.2f}×" if theirs else "–"
            print(f"| {scenario} | {label} | {theirs:,.1f} | {mine:,.1f} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 50])
    parser.add_argument("--runs-per-caller", type=int, default=10, help="runs.wait calls per concurrent caller")
    parser.add_argument("--min-runs", type=int, default=40, help="at least this many runs.wait calls per level")
    parser.add_argument("--words", type=int, default=1000, help="words in the streamed answer (tokens ≈ 2× words)")
    parser.add_argument("--stream-reps", type=int, default=3, help="streams per server per rep (median)")
    parser.add_argument("--peer", type=Path, default=ROOT / "data" / "langgraph-peer" / "venv" / "bin" / "langgraph")
    parser.add_argument("--peer-jobs", type=int, default=10, help="langgraph dev --n-jobs-per-worker")
    parser.add_argument("--ports", default="18600-18699")
    parser.add_argument("--work", type=Path, default=ROOT / "data" / "bench" / "agent_server")
    parser.add_argument("--json-out", type=Path, default=ROOT / "data" / "bench" / "agent_server.jsonl")
    args = parser.parse_args()
    if not args.peer.exists():
        raise SystemExit(f"{args.peer} is missing: run scripts/test-deps.d/40-langgraph-dev.sh")
    args.work.mkdir(parents=True, exist_ok=True)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    low, high = (int(p) for p in args.ports.split("-"))
    taken: set[int] = set()
    servers = [start_peer(args.peer, args.work, port_in(low, high, taken), args.peer_jobs),
               start_ours(args.work, port_in(low, high, taken))]
    try:
        for server in servers:
            wait_ok(server)
            print(f"# {server.name}: {server.url} (pid {server.process.pid})", flush=True)
        for server in servers:  # warm-up: imports, first-run caches, both graphs
            asyncio.run(runs_wait(server, 2, 10))
            asyncio.run(runs_stream(server, 50))
        print("# idle after warm-up: " + ", ".join(f"{s.name} RSS peak {peak_rss_mib(s.process.pid):.0f} MiB"
                                                    for s in servers), flush=True)
        with open(args.json_out, "a") as out:
            for rep in range(args.reps):
                rows = run_rep(servers, args, rep, out)
                print_table(rows, rep)
                print(f"\n`uptime`: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}\n",
                      flush=True)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()

"""Agent Streaming Protocol fan-out: our chat server against LangChain's local Agent Server (`langgraph dev`).

One run of this script starts, one after the other, `langgraph dev` (in-memory, offline) and our server in two
configurations (SQLite with the in-memory channel layer; PostgreSQL with Redis), all serving the `events` graph of
the shared harness (`langgraph_peer/graphs.py`: N custom events). For K = 1, 10, 50, 200 subscribers on the thread's
SSE stream it starts one run and measures, median over `--reps`:

* delivered events/s: custom events received by all subscribers ÷ (last delivery − emission of event 0);
* server CPU per delivered event (utime + stime of the server process from /proc);
* p99 delivery latency: receive time − emission time (`t` in the event) over every delivery;
* peak RSS of the server process (sampled every 50 ms);

and checks every subscriber got every event once, in order, plus the root terminal event. Client and servers share
this machine's cores, so compare CPU per event and the ratios rather than absolute wall-clock figures.

With `--paced`, latency as a user feels it instead: all servers serve bench/paced_graph.py, which emits `--rate`
custom events a second (default 100) for `--seconds` (default 30), each carrying its emission time; for K = 1, 50,
200 (one run each) K subscribers, raw-socket asyncio protocols in this one process (bench/raw_sse.py), take
receive time − emission time of every event: p50, p99 and max, plus the server's CPU and the time its threads spent
waiting for a core (/proc schedstat), and the 1-minute load average at the end of the run.

    .venv/bin/python bench/stream_fanout.py [--reps 3] [--k 1,10,50,200] [--n 2000]
        [--paced [--rate 100] [--seconds 30]]
        [--harness ../shared/bench] [--peer-venv data/bench/peer-venv] [--work data/bench/stream_fanout]
        [--postgres-url postgres://postgres@127.0.0.1:5432/postgres] [--postgres-db bench_stream_fanout]
        [--redis-url redis://127.0.0.1:6379/0] [--port-base N]

The peer's virtualenv is created on first use (`pip install "langgraph-cli[inmem]==0.4.40"`, i.e. the versions of
../shared/reference/peer-langgraph-dev.md). Results are appended to `--json-out` as JSON lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import raw_sse  # a sibling module: benches run as scripts
from bench_support import free_port, stop_process_group, wait_http  # noqa: E402 - a sibling module

ROOT = Path(__file__).resolve().parent.parent
PACED_GRAPH = Path(__file__).resolve().parent / "paced_graph.py"
PEER_PACKAGES = ["langgraph-cli[inmem]==0.4.40", "langgraph-api==0.16.7", "langgraph-runtime-inmem==0.36.7"]
CHANNELS = ["values", "messages", "custom", "lifecycle"]
TERMINAL = {"completed", "failed", "interrupted"}


@dataclass
class Server:
    """A server under test: how to reach it, and its process (for /proc sampling and stopping)."""

    name: str
    url: str
    process: subprocess.Popen
    stream_path: str
    commands_path: str
    create_thread: bool
    extra: dict = field(default_factory=dict)

    def stop(self) -> None:
        stop_process_group(self.process)

    @property
    def pid(self) -> int:
        # `langgraph dev` runs in the process we started (--no-reload); Daphne too.
        return self.process.pid


# --- starting the servers ---------------------------------------------------------------------------------------
def ensure_peer_venv(venv: Path) -> Path:
    langgraph = venv / "bin" / "langgraph"
    if not langgraph.exists():
        print(f"# creating the peer's virtualenv in {venv} ({', '.join(PEER_PACKAGES)})", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PEER_PACKAGES], check=True)
    return langgraph


def start_peer(harness: Path, venv: Path, work: Path, args) -> Server:
    langgraph = ensure_peer_venv(venv)
    project = work / "peer-project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    shutil.copy(harness / "langgraph_peer" / "graphs.py", project / "graphs.py")
    shutil.copy(PACED_GRAPH, project / PACED_GRAPH.name)
    config = json.loads((harness / "langgraph_peer" / "langgraph.json").read_text())
    config["graphs"]["paced"] = f"./{PACED_GRAPH.name}:paced_graph"
    (project / "langgraph.json").write_text(json.dumps(config))
    port = free_port(args.port_base)
    log = work / "peer.log"
    # The three settings that keep `langgraph dev` offline (peer-langgraph-dev.md §2).
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
           "LANGSMITH_TRACING": "false"}
    env.pop("LANGSMITH_API_KEY", None)
    with open(log, "wb") as out:
        process = subprocess.Popen([str(langgraph), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
                                    "--port", str(port)], cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/ok", process, log)
    return Server("langgraph dev", url, process, "/threads/{thread_id}/stream/events",
                  "/threads/{thread_id}/commands", create_thread=True)


def ours_env(harness: Path, work: Path, config: str, args) -> dict[str, str]:
    from cryptography.fernet import Fernet

    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(40),
           "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(), "ALLOWED_HOSTS": "127.0.0.1,localhost",
           "DATA_DIR": str(work / config), "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_MAX_STREAMS": "1000",
           "CHAT_GRAPH": (f"{PACED_GRAPH}:paced_graph" if args.paced
                          else f"{harness / 'langgraph_peer' / 'graphs.py'}:events_graph"), "PYTHONUNBUFFERED": "1",
           "DJANGO_SETTINGS_MODULE": "config.settings"}
    for name in ("TEST_DB_SUFFIX", "DATABASE_URL", "REDIS_URL", "SQLITE_PATH"):
        env.pop(name, None)
    (work / config).mkdir(parents=True, exist_ok=True)
    if config == "postgres+redis":
        env["DATABASE_URL"] = fresh_postgres_database(args.postgres_url, args.postgres_db)
        env["REDIS_URL"] = args.redis_url
    return env


def fresh_postgres_database(server_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def start_ours(harness: Path, work: Path, config: str, args) -> Server:
    env = ours_env(harness, work, config, args)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port(args.port_base)
    log = work / f"ours-{config}.log"
    env["PUBLIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                    "config.asgi:application"], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/healthz", process, log)
    return Server(f"ours ({config})", url, process, "/api/threads/{thread_id}/stream",
                  "/api/threads/{thread_id}/commands", create_thread=False)


# --- one measured run ---------------------------------------------------------------------------------------------
@dataclass
class Subscriber(raw_sse.RawSubscriber):
    """A subscriber of the burst scenario: what a raw one records, plus the clock of its first and last event."""

    emitted0: float | None = None
    last_at: float = 0.0


async def subscribe(http: httpx.AsyncClient, path: str, sub: Subscriber, ready: asyncio.Event, parser_cls) -> None:
    try:
        async with http.stream("POST", path, json={"channels": CHANNELS},
                               headers={"accept": "text/event-stream"}) as response:
            response.raise_for_status()
            ready.set()
            parser = parser_cls()
            async for chunk in response.aiter_bytes():
                arrived = time.time()
                for _, data, _ in parser.feed(chunk):
                    event = orjson.loads(data)
                    params = event.get("params") or {}
                    payload = params.get("data")
                    if event.get("method") == "custom" and isinstance(payload, dict) and "i" in payload:
                        sub.latencies.append(arrived - payload["t"])
                        if payload["i"] == 0:
                            sub.emitted0 = payload["t"]
                        sub.out_of_order += payload["i"] != sub.expect
                        sub.expect = payload["i"] + 1
                        sub.received += 1
                        sub.last_at = arrived
                    elif (event.get("method") == "lifecycle" and params.get("namespace") == []
                          and isinstance(payload, dict) and payload.get("event") in TERMINAL):
                        sub.terminal = True
                        return
    except Exception as exc:
        sub.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        ready.set()


async def measure(server: Server, k: int, n: int, harness_module) -> dict:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=50)
    async with httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(300, connect=10), limits=limits) as http:
        thread = str(uuid.uuid4())
        if server.create_thread:
            (await http.post("/threads", json={"thread_id": thread, "if_exists": "do_nothing"})).raise_for_status()
        subs, readies = [Subscriber() for _ in range(k)], [asyncio.Event() for _ in range(k)]
        tasks = [asyncio.create_task(subscribe(http, server.stream_path.format(thread_id=thread), s, r,
                                               harness_module.SSEParser)) for s, r in zip(subs, readies, strict=True)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
        await asyncio.sleep(0.3)
        sampler = harness_module.ProcSampler([server.pid])
        sampler.start()
        started = time.time()
        command = {"id": 1, "method": "run.start", "params": {"assistant_id": "events", "input": {"n": n}}}
        response = await http.post(server.commands_path.format(thread_id=thread), json=command)
        response.raise_for_status()
        assert response.json().get("type") == "success", response.text
        await asyncio.wait_for(asyncio.gather(*tasks), 600)
        usage = await sampler.stop()
    latencies = sorted(x for s in subs for x in s.latencies)
    delivered = sum(s.received for s in subs)
    # From the emission of event 0 (its server-side timestamp) to the last delivery, as peer_bench.py counts.
    first_emission = min((s.emitted0 for s in subs if s.emitted0), default=started)
    span = max(s.last_at for s in subs) - first_emission
    return {
        "server": server.name, "k": k, "n": n, "delivered": delivered,
        "events_per_s": delivered / span if span > 0 else None,
        "cpu_us_per_event": usage["server_cpu_s"] / delivered * 1e6 if delivered else None,
        "p99_latency_ms": latencies[int(len(latencies) * 0.99) - 1] * 1e3 if latencies else None,
        "peak_rss_mb": usage["server_peak_rss_mb"], "load_avg_1m": os.getloadavg()[0],
        "complete": all(s.received == n and s.terminal and not s.out_of_order and not s.error for s in subs),
        "errors": [s.error for s in subs if s.error][:3],
    }


# --- the paced scenario: latency as a user feels it -----------------------------------------------------------
def run_queue_wait(pid: int) -> float:
    """Seconds the process's threads have spent runnable but waiting for a core (/proc/<pid>/task/*/schedstat):
    on shared cores, how much of a delay was the machine's rather than the server's."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def percentile(values: list[float], q: float) -> float | None:
    return values[min(len(values) - 1, int(len(values) * q))] if values else None


async def measure_paced(server: Server, k: int, args, harness_module) -> dict:
    """K raw-socket subscribers (this one process) on one thread, while the paced graph streams `rate` events/s."""
    async with httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(60, connect=10)) as http:
        thread = str(uuid.uuid4())
        if server.create_thread:
            (await http.post("/threads", json={"thread_id": thread, "if_exists": "do_nothing"})).raise_for_status()
        host, port = server.url.removeprefix("http://").split(":")
        path = server.stream_path.format(thread_id=thread)
        subs, readies = [raw_sse.RawSubscriber() for _ in range(k)], [asyncio.Event() for _ in range(k)]
        tasks = [asyncio.create_task(raw_sse.subscribe(host, int(port), path, {"channels": CHANNELS}, s, r))
                 for s, r in zip(subs, readies, strict=True)]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
        await asyncio.sleep(0.3)
        sampler = harness_module.ProcSampler([server.pid])
        sampler.start()
        started, client_cpu0, waited0 = time.monotonic(), time.process_time(), run_queue_wait(server.pid)
        command = {"id": 1, "method": "run.start",
                   "params": {"assistant_id": "paced", "input": {"rate": args.rate, "seconds": args.seconds}}}
        response = await http.post(server.commands_path.format(thread_id=thread), json=command)
        response.raise_for_status()
        assert response.json().get("type") == "success", response.text
        await asyncio.wait_for(asyncio.gather(*tasks), args.seconds + 900)
        wall, client_cpu = time.monotonic() - started, time.process_time() - client_cpu0
        waited = run_queue_wait(server.pid) - waited0
        usage = await sampler.stop()
    latencies = sorted(x for s in subs for x in s.latencies)
    n = int(args.rate * args.seconds)
    return {
        "mode": "paced", "server": server.name, "k": k, "rate": args.rate, "seconds": args.seconds,
        "delivered": sum(s.received for s in subs),
        "p50_latency_ms": percentile(latencies, 0.50) * 1e3 if latencies else None,
        "p99_latency_ms": percentile(latencies, 0.99) * 1e3 if latencies else None,
        "max_latency_ms": latencies[-1] * 1e3 if latencies else None,
        "server_cpu_pct": usage["server_cpu_s"] / wall * 100, "client_cpu_pct": client_cpu / wall * 100,
        "server_runq_wait_pct": waited / wall * 100,
        "peak_rss_mb": usage["server_peak_rss_mb"], "load_avg_1m": os.getloadavg()[0],
        "complete": all(s.received == n and s.terminal and not s.out_of_order and not s.error for s in subs),
        "errors": [s.error for s in subs if s.error][:3],
    }


def run_server_paced(server: Server, args, harness_module, out) -> dict[int, dict]:
    summary = {}
    try:
        # Warm-up: imports, first-run caches (one second of events, one subscriber).
        asyncio.run(measure_paced(server, 1, argparse.Namespace(rate=args.rate, seconds=1), harness_module))
        for k in args.k:
            row = asyncio.run(measure_paced(server, k, args, harness_module))
            out.write(json.dumps(row) + "\n")
            out.flush()
            summary[k] = row
            print(f"  {server.name:28s} K={k:<4d} {fmt(row, PACED_COLUMNS)}", flush=True)
            time.sleep(0.5)
    finally:
        server.stop()
    return summary


# Console columns: (row key, format); a missing value prints as 0.
BURST_COLUMNS = (("events_per_s", "{:9.0f} ev/s"), ("cpu_us_per_event", "{:7.1f} µs/ev"),
                 ("p99_latency_ms", "p99 {:8.1f} ms"), ("peak_rss_mb", "RSS {:6.0f} MiB"),
                 ("load_avg_1m", "load {:.1f}"))
PACED_COLUMNS = (("p50_latency_ms", "p50 {:7.1f} ms"), ("p99_latency_ms", "p99 {:7.1f} ms"),
                 ("max_latency_ms", "max {:7.1f} ms"), ("server_cpu_pct", "server CPU {:5.1f} %"),
                 ("client_cpu_pct", "client CPU {:5.1f} %"), ("server_runq_wait_pct", "runq wait {:5.1f} %"),
                 ("peak_rss_mb", "RSS {:4.0f} MiB"), ("load_avg_1m", "load {:.2f}"))


def fmt(row: dict, columns=BURST_COLUMNS) -> str:
    cells = [template.format(row[key] or 0) for key, template in columns]
    return "  ".join([*cells, "ok" if row["complete"] else f"INCOMPLETE {row.get('errors', '')}"])


def print_markdown_table(headers: list[str], results: dict[str, dict[int, dict]], ks: list[int], cells) -> None:
    """Every server's row at each K; `cells(name, k, row)` gives the cells after K and the server's name."""
    print("\n| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for k in ks:
        for name, rows in results.items():
            if rows.get(k):
                print("| " + " | ".join([str(k), name, *cells(name, k, rows[k])]) + " |")


def print_table_paced(results: dict[str, dict[int, dict]], ks: list[int]) -> None:
    def cells(name: str, k: int, row: dict) -> list[str]:
        return [f"{row['p50_latency_ms'] or 0:.1f}", f"{row['p99_latency_ms'] or 0:.1f}",
                f"{row['max_latency_ms'] or 0:.0f}", f"{row['server_cpu_pct']:.1f}", f"{row['client_cpu_pct']:.1f}",
                f"{row['server_runq_wait_pct']:.1f}", f"{row['peak_rss_mb'] or 0:.0f}", f"{row['load_avg_1m']:.2f}"]

    print_markdown_table(["K", "server", "p50 ms", "p99 ms", "max ms", "server CPU %", "client CPU %",
                          "server waiting for a core %", "peak RSS MiB", "load (1 min)"], results, ks, cells)


# --- driver -------------------------------------------------------------------------------------------------------
def load_harness(harness: Path):
    if not (harness / "peer_bench.py").exists():
        raise SystemExit(f"no peer_bench.py in {harness}: pass --harness ../shared/bench")
    sys.path.insert(0, str(harness))
    import peer_bench

    return peer_bench


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run_server(server: Server, args, harness_module, out) -> dict[int, dict]:
    summary = {}
    try:
        asyncio.run(measure(server, 1, 50, harness_module))  # warm-up: imports, first-run caches
        for k in args.k:
            reps = []
            for rep in range(args.reps):
                result = asyncio.run(measure(server, k, args.n, harness_module))
                reps.append(result)
                out.write(json.dumps({"rep": rep, **result}) + "\n")
                out.flush()
                time.sleep(0.5)
            summary[k] = {key: median([r[key] for r in reps]) for key in
                          ("events_per_s", "cpu_us_per_event", "p99_latency_ms", "peak_rss_mb", "load_avg_1m")}
            summary[k]["complete"] = all(r["complete"] for r in reps)
            print(f"  {server.name:28s} K={k:<4d} {fmt(summary[k])}", flush=True)
    finally:
        server.stop()
    return summary


def print_table(results: dict[str, dict[int, dict]], ks: list[int]) -> None:
    peer = results.get("langgraph dev")

    def cells(name: str, k: int, row: dict) -> list[str]:
        ratio = ""
        if peer and name != "langgraph dev" and peer.get(k) and row["events_per_s"]:
            base = peer[k]
            ratio = (f"{row['events_per_s'] / base['events_per_s']:.1f}×, "
                     f"{row['cpu_us_per_event'] / base['cpu_us_per_event']:.2f}×, "
                     f"{row['peak_rss_mb'] / base['peak_rss_mb']:.2f}×")
        return [f"{row['events_per_s']:.0f}", f"{row['cpu_us_per_event']:.1f}", f"{row['p99_latency_ms']:.0f}",
                f"{row['peak_rss_mb']:.0f}", ratio, f"{row['load_avg_1m'] or 0:.1f}"]

    print_markdown_table(["K", "server", "delivered ev/s", "server CPU µs/ev", "p99 latency ms", "peak RSS MiB",
                          "vs peer (ev/s, CPU, RSS)", "load (1 min)"], results, ks, cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=lambda s: [int(x) for x in s.split(",")], default=None,
                        help="subscriber counts (default 1,10,50,200; with --paced 1,50,200)")
    parser.add_argument("--paced", action="store_true",
                        help="the paced scenario: --rate events/s for --seconds, p50/p99 emission-to-delivery")
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port-base", type=int, default=None, help="try ports from here on (default: any free)")
    parser.add_argument("--postgres-db", default="bench_stream_fanout", help="created afresh, left behind")
    parser.add_argument("--n", type=int, default=2000, help="custom events per run")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--harness", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--peer-venv", type=Path, default=ROOT / "data" / "bench" / "peer-venv")
    parser.add_argument("--work", type=Path, default=ROOT / "data" / "bench" / "stream_fanout")
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--servers", default="peer,sqlite,postgres+redis",
                        help="comma-separated subset of peer, sqlite, postgres+redis")
    parser.add_argument("--json-out", type=Path, default=ROOT / "data" / "bench" / "stream_fanout.jsonl")
    args = parser.parse_args()
    args.k = args.k or ([1, 50, 200] if args.paced else [1, 10, 50, 200])
    harness = load_harness(args.harness.resolve())
    args.work.mkdir(parents=True, exist_ok=True)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    wanted = args.servers.split(",")
    results: dict[str, dict[int, dict]] = {}
    with open(args.json_out, "a") as out:
        for name in ("peer", "sqlite", "postgres+redis"):
            if name not in wanted:
                continue
            server = (start_peer(args.harness.resolve(), args.peer_venv, args.work, args) if name == "peer"
                      else start_ours(args.harness.resolve(), args.work, name, args))
            print(f"# {server.name}: {server.url} (pid {server.pid})", flush=True)
            results[server.name] = (run_server_paced if args.paced else run_server)(server, args, harness, out)
    (print_table_paced if args.paced else print_table)(results, args.k)


if __name__ == "__main__":
    main()

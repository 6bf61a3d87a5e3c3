"""Benchmark: trace ingestion through the official langsmith SDK against a bare bulk_create of the same rows.

A live server (Daphne with DEBUG off, as in production) on a fresh database; the official `langsmith` Client sends
20,000 complete runs (2,000 traces of 10 runs) with `create_run`, which its background thread batches
into zstd-compressed multipart requests after reading our /info. The benchmark waits for
`client.flush()`, checks that all 20,000 runs are stored, then deletes them and writes the very same
rows with `Run.objects.bulk_create`. Each round does both; it prints the median runs/s of each, the
ratio (target >= 0.9) and where the server's time went in the median round (from TRACING_INGEST_LOG).

    .venv/bin/python bench/ingest.py                          # SQLite in a temporary directory
    .venv/bin/python bench/ingest.py --backend postgres --postgres-url postgres://postgres@127.0.0.1:5432/x

The PostgreSQL run uses its own database (created if missing, default `ingest_bench`) and deletes
the benchmark's workspace afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_support import production_env, setup_django_on  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/ingest_bench"
RUNS_PER_TRACE = 10
PHASES = ("read", "decompress", "parse", "validate", "wait", "database")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of both; medians are reported.")
    args = parser.parse_args()
    if args.runs % RUNS_PER_TRACE:
        parser.error(f"--runs must be a multiple of {RUNS_PER_TRACE}")
    workdir = Path(tempfile.mkdtemp(prefix="bench-ingest-", dir=ROOT / "data"))
    setup_django(args.backend, args.postgres_url, workdir)
    run(args.runs, args.rounds, workdir, args.backend)
    # Kept when the run failed: the server log and the ingest log are in it.
    shutil.rmtree(workdir, ignore_errors=True)


def setup_django(backend: str, postgres_url: str, workdir: Path) -> None:
    setup_django_on(backend, postgres_url=postgres_url, sqlite_path=workdir / "bench.sqlite3")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)


def make_runs(count: int, project: str) -> list[dict]:
    """Complete runs (post with outputs and end_time) in traces: a root chain, an LLM call, tools, a sub-chain."""
    runs = []
    base = datetime.now(UTC) - timedelta(hours=1)
    for trace in range(count // RUNS_PER_TRACE):
        start = base + timedelta(milliseconds=trace * 10)
        root_id = uuid.uuid4()
        root_order = start.strftime("%Y%m%dT%H%M%S%fZ") + str(root_id)
        runs.append(_run(root_id, root_id, None, root_order, "agent", "chain", start, project))
        sub_id, sub_order = None, None
        for index in range(1, RUNS_PER_TRACE):
            run_id = uuid.uuid4()
            child_start = start + timedelta(microseconds=index * 100)
            nested = index > 5 and sub_id is not None
            parent_id, parent_order = (sub_id, sub_order) if nested else (root_id, root_order)
            order = f"{parent_order}.{child_start.strftime('%Y%m%dT%H%M%S%fZ')}{run_id}"
            run_type = "llm" if index % 3 == 1 else "tool" if index % 3 == 2 else "chain"
            runs.append(_run(run_id, root_id, parent_id, order, f"step-{index}", run_type, child_start, project))
            if index == 3:
                sub_id, sub_order = run_id, order
    return runs


def _run(run_id, trace_id, parent_id, dotted_order, name, run_type, start, project) -> dict:
    outputs = {"answer": f"{name} done " + "y" * 120}
    if run_type == "llm":
        outputs["usage_metadata"] = {"input_tokens": 120, "output_tokens": 40, "total_tokens": 160}
    return {
        "id": run_id, "trace_id": trace_id, "parent_run_id": parent_id, "dotted_order": dotted_order,
        "name": name, "run_type": run_type, "start_time": start, "end_time": start + timedelta(milliseconds=5),
        "inputs": {"question": "What is the weather in Paris? " + "x" * 150, "step": name},
        "outputs": outputs, "tags": ["bench"], "extra": {"metadata": {"user": "bench", "env": "load"}},
        "project_name": project,
    }


def run(count: int, rounds: int, workdir: Path, backend: str) -> None:
    from accounts.services import api_key_create, workspace_create
    from tests.support_processes import LiveServer

    workspace = workspace_create(name=f"bench-ingest-{uuid.uuid4().hex[:8]}")
    _, key = api_key_create(workspaces=[workspace], permissions=["tracing:write"])
    log_path = workdir / "ingest.jsonl"
    # As in production: DEBUG off (with DEBUG on, Django also runs an extra query per statement to log it).
    server = LiveServer(env={"TRACING_INGEST_LOG": str(log_path), "LOG_LEVEL": "WARNING",
                             "THROTTLE_RATES": "tracing-ingest=100000/min", **production_env()},
                        log_path=workdir / "server.log").start()
    results = []
    try:
        for number in range(rounds):
            log_path.unlink(missing_ok=True)
            ours, enqueue = sdk_ingest(server.url, key, workspace, count, f"bench-{number}", workdir)
            requests = [json.loads(line) for line in log_path.read_text().splitlines()]
            results.append({"ours": ours, "enqueue": enqueue, "bare": bare_insert(workspace, count),
                            "requests": requests})
            print(f"  round {number + 1}: ours {count / ours:6.0f} runs/s, bare {count / results[-1]['bare']:6.0f} "
                  f"runs/s, ratio {results[-1]['bare'] / ours:.2f}", flush=True)
    finally:
        server.stop()
        if backend == "postgres":
            workspace.delete()
    report(count, results, backend)




def sdk_ingest(url: str, key: str, workspace, count: int, project: str, workdir: Path) -> tuple[float, float]:
    """Send `count` runs with the official Client; (seconds until all are stored, seconds in create_run)."""
    from langsmith import Client

    from tracing.models import Run

    runs = make_runs(count, project)
    client = Client(api_url=url, api_key=key)
    wait_for_zstd(client)
    started = time.perf_counter()
    for body in runs:
        client.create_run(**body)
    enqueued = time.perf_counter()
    client.flush()
    finished = time.perf_counter()
    client.cleanup(timeout=0)
    stored = Run.objects.filter(workspace=workspace, session__name=project).count()
    assert stored == count, f"only {stored} of {count} runs were stored (see {workdir / 'server.log'})"
    return finished - started, enqueued - started


def wait_for_zstd(client) -> None:
    deadline = time.monotonic() + 10
    while client.compressed_traces is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if client.compressed_traces is None:
        raise SystemExit("the SDK did not switch to zstd multipart after reading /info")


def bare_insert(workspace, count: int) -> float:
    """Delete the ingested rows and write exactly the same ones with one bulk_create; return its seconds."""
    from tracing.models import Run

    names = [field.attname for field in Run._meta.concrete_fields]
    rows = list(Run.objects.filter(workspace=workspace).values(*names))
    Run.objects.filter(workspace=workspace).delete()
    started = time.perf_counter()
    Run.objects.bulk_create([Run(**row) for row in rows])
    seconds = time.perf_counter() - started
    assert Run.objects.filter(workspace=workspace).count() == count
    Run.objects.filter(workspace=workspace).delete()  # the next round starts from the same table
    return seconds


def report(count: int, results: list[dict], backend: str) -> None:
    middle = sorted(results, key=lambda result: result["bare"] / result["ours"])[len(results) // 2]
    ours = statistics.median(count / result["ours"] for result in results)
    bare = statistics.median(count / result["bare"] for result in results)
    requests = middle["requests"]
    handler = sum(r["total"] for r in requests)
    encodings = sorted({f"{r['route']} ({r['encoding']})" for r in requests})
    print(f"trace ingestion, {count} runs, {backend}, median of {len(results)} rounds")
    print(f"  official SDK -> live server : {ours:9.0f} runs/s  ({len(requests)} requests to {', '.join(encodings)})")
    print(f"  bare bulk_create            : {bare:9.0f} runs/s")
    per_round = ", ".join(f"{result['bare'] / result['ours']:.2f}" for result in results)
    paired = statistics.median(result["bare"] / result["ours"] for result in results)
    print(f"  ratio ours / bare           : {ours / bare:9.2f}  of the medians; {paired:.2f} median of the per-round "
          f"ratios ({per_round}; target >= 0.9)")
    print(f"where the time goes in the median round (server handler {handler:.2f} s, "
          f"{handler / count * 1e6:.0f} us/run; SDK create_run calls {middle['enqueue']:.2f} s; "
          f"wall {middle['ours']:.2f} s):")
    accounted = 0.0
    for phase in PHASES:
        spent = sum(r.get(phase, 0.0) for r in requests)
        accounted += spent
        print(f"  {phase:<10} {spent:7.2f} s  {spent / count * 1e6:6.0f} us/run  {spent / handler:6.1%} of handler")
    other = handler - accounted
    print(f"  {'other':<10} {other:7.2f} s  {other / count * 1e6:6.0f} us/run  {other / handler:6.1%} of handler")
    print(f"  bare bulk_create in that round: {middle['bare'] / count * 1e6:.0f} us/run")


if __name__ == "__main__":
    main()

"""Bulk export of 1,000,000 runs to a loopback S3 server: ours against two bare pyarrow scripts.

    .venv/bin/python bench/export.py [--rows 1000000] [--backend sqlite|postgres] [--compression gzip]

- ours: one export created with the service and run by a real `manage.py run_worker --once` process (the
  production path: keyset pages, Arrow conversion, row groups, multipart upload through the egress-pinned S3
  client, progress commits); its time is the run's started_at -> finished_at, its memory the process's peak RSS;
- (a) a bare script: one server-side-cursor SELECT of the same rows (same columns, same SQL conversions) fetched in
  chunks into a pyarrow ParquetWriter that streams to the same S3 server through pyarrow's own S3 filesystem:
  the limit of the whole job in this design;
- (b) `pyarrow.parquet.write_table` of the same rows already in memory (each of our files read back before the
  clock starts, then written again) to the same server: the limit of the write side alone.

Each of the three runs in its own child process (peak RSS measured with wait4); moto runs in another process.
Before the export exists, the same `run_worker --once` runs once with nothing to do: its peak RSS is the worker's
baseline (every app loaded), which ours' peak includes. All rows lie in one UTC day, so ours is one run; its files
are read back to check that every run is in them once. The load average (1, 5, 15 min) is printed after each
contender. The seeded database is removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import production_env  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUCKET = "bench-exports"
KEY_ID, SECRET = "BENCHEXPORTKEYID0000", "bench-secret"
DAY = "2026-03-01"
BASE_EPOCH = 1772323200  # 2026-03-01T00:00:00Z
DAY_MS = 86_400_000
FIELDS = ("id", "tenant_id", "session_id", "trace_id", "parent_run_id", "parent_run_ids", "reference_example_id",
          "name", "run_type", "start_time", "end_time", "status", "is_root", "dotted_order", "trace_tier", "inputs",
          "outputs", "error", "extra", "events", "tags", "feedback_stats", "total_tokens", "prompt_tokens",
          "completion_tokens", "total_cost", "prompt_cost", "completion_cost", "first_token_time")
CODECS = {"none": "NONE", "gzip": "GZIP", "snappy": "SNAPPY", "zstandard": "ZSTD"}
LEVELS = {"gzip": 6}  # the level ours uses (zlib's default): every contender compresses the same way


# --- environment -----------------------------------------------------------------------------------


def environment(args, data_dir: str, endpoint: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": data_dir,
           "EGRESS_ALLOWLIST": "127.0.0.1", "LOG_LEVEL": "WARNING", "TRACING_RETENTION_DAYS": "0",
           "BENCH_ENDPOINT": endpoint, "PYTHONUNBUFFERED": "1", "REDIS_URL": "",
           # As in production: with DEBUG on, Django keeps every query in a log (up to 9,000) and, on SQLite,
           # runs an extra query per statement to write it, which neither (a) nor (b) pays.
           **production_env()}
    env.pop("TEST_DB_SUFFIX", None)
    if args.backend == "postgres":
        env["DATABASE_URL"] = args.database_url
    else:
        env["DATABASE_URL"] = ""
        env["SQLITE_PATH"] = str(Path(data_dir) / "bench.sqlite3")
    return env


def start_moto(port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import httpx

    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("moto did not start")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_child(argv: list[str], env: dict) -> tuple[dict, float]:
    """Run a child process; return its last JSON line and its peak RSS in MiB."""
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output = process.stdout.read()
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"{argv} failed:\n{errors.decode(errors='replace')[-4000:]}")
    lines = [line for line in output.decode().splitlines() if line.startswith("{")]
    return (json.loads(lines[-1]) if lines else {}), usage.ru_maxrss / 1024


# --- seeding ---------------------------------------------------------------------------------------


def seed(rows: int) -> dict:
    """Workspace, project, destination, and `rows` runs inside one UTC day (80 ms apart, or closer when 80 ms would
    not fit them in a day: 17 ms for 5,000,000)."""
    from django.core.management import call_command
    from django.db import connection

    from accounts.services import workspace_create
    from exports.destinations import services
    from tracing.models import TracingProject

    call_command("migrate", verbosity=0)
    workspace = workspace_create(name="bench-export")
    project = TracingProject.objects.create(workspace=workspace, name="bench")
    import boto3

    boto3.client("s3", endpoint_url=os.environ["BENCH_ENDPOINT"], region_name="us-east-1", aws_access_key_id=KEY_ID,
                 aws_secret_access_key=SECRET).create_bucket(Bucket=BUCKET)
    destination = services.destination_create(
        workspace=workspace, display_name="bench",
        config={"bucket_name": BUCKET, "prefix": "ours", "endpoint_url": os.environ["BENCH_ENDPOINT"],
                "region": None, "include_bucket_in_prefix": True, "config_kwargs_s3": {"addressing_style": "path"},
                "s3_additional_kwargs": {}},
        credentials={"access_key_id": KEY_ID, "secret_access_key": SECRET})
    spacing = min(80, DAY_MS // rows)  # milliseconds between two runs
    started = time.monotonic()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(PG_SEED, [str(workspace.id), str(project.id), spacing, rows])
        else:
            cursor.execute(SQLITE_SEED, [rows - 1, workspace.id.hex, project.id.hex, spacing, spacing, spacing])
        cursor.execute("ANALYZE")
    return {"workspace": str(workspace.id), "project": str(project.id), "destination": str(destination.id),
            "seed_seconds": time.monotonic() - started}


_PAYLOAD = ("'{\"messages\": [{\"role\": \"user\", \"content\": \"What is the weather in Paris on day ' || n || "
            "'? Answer briefly.\"}], \"temperature\": 0.2}'")
SQLITE_SEED = f"""
WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < %s)
INSERT INTO tracing_run (id, tenant_id, session_id, trace_id, parent_run_id, parent_run_ids, reference_example_id,
    name, run_type, start_time, end_time, status, is_root, dotted_order, trace_tier, inputs, outputs, error, extra,
    events, tags, feedback_stats, total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost,
    completion_cost, first_token_time, created_at, updated_at)
SELECT u, %s, %s, u, NULL, '[]', NULL, 'step-' || n, CASE n %% 3 WHEN 0 THEN 'llm' WHEN 1 THEN 'chain' ELSE 'tool' END,
    t, t, 'success', 1, strftime('%%Y%%m%%dT%%H%%M%%S', t) || 'Z' || u, NULL,
    {_PAYLOAD}, '{{"answer": "Sunny, 21 degrees, light wind from the west."}}', NULL,
    '{{"metadata": {{"ls_model_name": "gpt-4o-mini", "n": ' || n || '}}}}', '[]', '["bench", "t' || (n %% 5) || '"]',
    NULL, n %% 1000, n %% 700, n %% 300, (n %% 1000) * 0.000002, (n %% 700) * 0.000001, (n %% 300) * 0.000003, NULL,
    t, t
FROM (SELECT n, lower(hex(randomblob(16))) AS u,
             datetime({BASE_EPOCH} + (n * %s) / 1000, 'unixepoch') ||
             CASE (n * %s) %% 1000 WHEN 0 THEN '' ELSE '.' || printf('%%06d', ((n * %s) %% 1000) * 1000) END
             AS t FROM seq)
"""
# Timestamps as Django writes them (no ".000000" on whole seconds): the keyset cursor compares the text.
PG_SEED = f"""
INSERT INTO tracing_run (id, tenant_id, session_id, trace_id, parent_run_id, parent_run_ids, reference_example_id,
    name, run_type, start_time, end_time, status, is_root, dotted_order, trace_tier, inputs, outputs, error, extra,
    events, tags, feedback_stats, total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost,
    completion_cost, first_token_time, created_at, updated_at)
SELECT u, %s::uuid, %s::uuid, u, NULL, '[]', NULL, 'step-' || n,
    CASE n %% 3 WHEN 0 THEN 'llm' WHEN 1 THEN 'chain' ELSE 'tool' END, t, t, 'success', true,
    to_char(t, 'YYYYMMDD"T"HH24MISSUS"Z"') || u, NULL, ({_PAYLOAD})::jsonb,
    '{{"answer": "Sunny, 21 degrees, light wind from the west."}}'::jsonb, NULL,
    ('{{"metadata": {{"ls_model_name": "gpt-4o-mini", "n": ' || n || '}}}}')::jsonb, '[]'::jsonb,
    ('["bench", "t' || (n %% 5) || '"]')::jsonb, NULL, n %% 1000, n %% 700, n %% 300, (n %% 1000) * 0.000002,
    (n %% 700) * 0.000001, (n %% 300) * 0.000003, NULL, t, t
FROM (SELECT n, gen_random_uuid() AS u, to_timestamp({BASE_EPOCH}) + n * (%s * interval '1 millisecond') AS t
      FROM generate_series(0, %s - 1) AS n) AS rows
"""


# --- the three contenders (each in its own process) -----------------------------------------------


def ours(info: dict, compression: str) -> dict:
    """Create the export in this process; a `run_worker --once` child runs it (the caller measures it)."""
    from datetime import datetime, timedelta

    from accounts.models import Workspace
    from exports.bulk_exports import services as export_services

    start = datetime.fromisoformat(DAY + "T00:00:00+00:00")
    export = export_services.export_create(
        workspace=Workspace.objects.get(id=info["workspace"]), destination_id=info["destination"],
        session_id=info["project"], start_time=start, end_time=start + timedelta(days=1), compression=compression)
    return {"export": str(export.id)}


def ours_result(export_id: str) -> dict:
    from exports.bulk_exports.models import BulkExportRun

    run = BulkExportRun.objects.get(bulk_export_id=export_id)
    assert run.status == "Completed", (run.status, run.errors)
    return {"rows": run.rows_written, "seconds": (run.finished_at - run.started_at).total_seconds(),
            "files": run.exported_files}


def distinct_ids(files: list[str]) -> dict:
    """The number of distinct run ids in our files (read back from the S3 server)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ids = pa.chunked_array([pq.read_table(key, columns=["id"], filesystem=_s3fs()).column("id").combine_chunks()
                            for key in files])
    return {"distinct_ids": pc.count_distinct(ids).as_py()}


def _s3fs():
    from pyarrow import fs

    endpoint = os.environ["BENCH_ENDPOINT"]
    # Generous timeouts: on a loaded machine moto can take seconds to start sending a file of hundreds of MiB.
    return fs.S3FileSystem(access_key=KEY_ID, secret_key=SECRET, region="us-east-1", scheme="http",
                           endpoint_override=endpoint.removeprefix("http://"), connect_timeout=60,
                           request_timeout=600)


def _peer_sql(vendor: str) -> str:
    uuid_fields = {"id", "tenant_id", "session_id", "trace_id", "parent_run_id", "reference_example_id"}
    json_fields = {"parent_run_ids", "inputs", "outputs", "extra", "events", "tags", "feedback_stats"}
    columns = []
    for name in FIELDS:
        if vendor == "postgresql":
            expr = f"{name}::text" if name in uuid_fields | json_fields else (
                f"{name}::float8" if name.endswith("_cost") else name)
        elif name in uuid_fields:
            expr = (f"substr({name},1,8)||'-'||substr({name},9,4)||'-'||substr({name},13,4)||'-'||"
                    f"substr({name},17,4)||'-'||substr({name},21,12)")
        elif name in ("start_time", "end_time", "first_token_time"):
            expr = f"CAST({name} AS TEXT)"
        elif name.endswith("_cost"):
            expr = f"CAST({name} AS REAL)"
        else:
            expr = name
        columns.append(expr)
    placeholder = "%s" if vendor == "postgresql" else "?"
    return (f"SELECT {', '.join(columns)} FROM tracing_run WHERE session_id = {placeholder} AND start_time >= "
            f"{placeholder} AND start_time < {placeholder} ORDER BY start_time, id")


def _arrow_batch(rows, vendor: str):
    import pyarrow as pa

    columns = list(zip(*rows, strict=True))
    arrays = []
    for name, values in zip(FIELDS, columns, strict=True):
        if name in ("start_time", "end_time", "first_token_time"):
            arrays.append(pa.array(values, type=pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us"))
                          if vendor == "postgresql" else pa.array(values, pa.string()).cast(pa.timestamp("us")))
        elif name == "is_root":
            arrays.append(pa.array(values, pa.bool_()) if vendor == "postgresql"
                          else pa.array(values, pa.int8()).cast(pa.bool_()))
        elif name.endswith("_tokens"):
            arrays.append(pa.array(values, pa.int64()))
        elif name.endswith("_cost"):
            arrays.append(pa.array(values, pa.float64()))
        else:
            arrays.append(pa.array(values, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=list(FIELDS))


def peer_a(info: dict, compression: str) -> dict:
    """Server-side cursor -> chunks -> ParquetWriter -> pyarrow's S3 output stream."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s3fs = _s3fs()
    database_url = os.environ.get("DATABASE_URL")
    vendor = "postgresql" if database_url else "sqlite"
    started = time.monotonic()
    if vendor == "postgresql":
        import psycopg

        connection = psycopg.connect(database_url.replace("postgres://", "postgresql://"))
        connection.autocommit = False
        cursor = connection.cursor(name="peer_a")
        session = info["project"]
        params = (session, f"{DAY}T00:00:00+00:00", "2026-03-02T00:00:00+00:00")
    else:
        import sqlite3

        connection = sqlite3.connect(os.environ["SQLITE_PATH"])
        cursor = connection.cursor()
        params = (info["project"].replace("-", ""), f"{DAY} 00:00:00", "2026-03-02 00:00:00")
    cursor.execute(_peer_sql(vendor), params)
    rows_total, pending, pending_rows = 0, [], 0
    with s3fs.open_output_stream(f"{BUCKET}/peer-a/part-00000.parquet") as sink:
        writer = None
        while True:
            rows = cursor.fetchmany(5000)
            if rows:
                batch = _arrow_batch(rows, vendor)
                pending.append(batch)
                pending_rows += len(rows)
                rows_total += len(rows)
            if pending and (pending_rows >= 100_000 or not rows):
                table = pa.Table.from_batches(pending)
                writer = writer or pq.ParquetWriter(sink, table.schema, compression=CODECS[compression],
                                                    compression_level=LEVELS.get(compression))
                writer.write_table(table, row_group_size=table.num_rows)
                pending, pending_rows = [], 0
            if not rows:
                break
        writer.close()
    connection.close()
    return {"rows": rows_total, "seconds": time.monotonic() - started}


def peer_b(info: dict, compression: str, files: list[str]) -> dict:
    """The same rows already in memory, written with write_table: each of our files is read back (off the clock)
    and written again, one at a time, so (b) writes every row once and holds one file's rows at a time."""
    import pyarrow.parquet as pq

    s3fs = _s3fs()
    rows, seconds = 0, 0.0
    for index, source_key in enumerate(files):
        table = pq.read_table(source_key, filesystem=s3fs)
        started = time.monotonic()
        pq.write_table(table, f"{BUCKET}/peer-b/part-{index:05d}.parquet", filesystem=s3fs,
                       compression=CODECS[compression], compression_level=LEVELS.get(compression),
                       row_group_size=100_000)
        seconds += time.monotonic() - started
        rows += table.num_rows
        del table
    return {"rows": rows, "seconds": seconds}


# --- driver --------------------------------------------------------------------------------------------


def child_main(argv: list[str]) -> None:
    import django

    django.setup()
    role, info, compression = argv[0], json.loads(argv[1]), argv[2]
    if role == "seed":
        result = seed(info["rows"])
    elif role == "create":
        result = ours(info, compression)
    elif role == "result":
        result = ours_result(info["export"])
    elif role == "check":
        result = distinct_ids(info["files"])
    elif role == "a":
        result = peer_a(info, compression)
    else:
        result = peer_b(info, compression, info["files"])
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_export")
    parser.add_argument("--compression", choices=list(CODECS), default="gzip")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary data directory.")
    parser.add_argument("--port", type=int, default=0, help="The S3 server's port (default: any free one).")
    parser.add_argument("--rounds", type=int, default=1,
                        help="Run ours and (a) this many times on the same rows, the first of the two alternating "
                             "from round 2 on, and print the per-round ratios (a shared machine's load moves).")
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="bench-export-")
    port = args.port or free_port()
    moto = start_moto(port)
    env = environment(args, data_dir, f"http://127.0.0.1:{port}")
    if args.backend == "postgres":
        recreate_database(args.database_url)
    me = [sys.executable, str(Path(__file__).resolve()), "--child"]
    worker = [sys.executable, "manage.py", "run_worker", "--once", "--queues", "exports", "--no-periodic"]
    loads = {}
    try:
        info, _ = run_child([*me, "seed", json.dumps({"rows": args.rows}), args.compression], env)
        print(f"seeded {args.rows:,} runs on {args.backend} in {info['seed_seconds']:.1f} s", flush=True)
        _, idle_rss = run_child(worker, env)  # no job yet: the worker's baseline, every app loaded
        created, _ = run_child([*me, "create", json.dumps(info), args.compression], env)
        _, ours_rss = run_child(worker, env)
        loads["ours"] = os.getloadavg()
        result, _ = run_child([*me, "result", json.dumps(created), args.compression], env)
        print(f"  ours: {result['rows']:,} rows in {result['seconds']:.1f} s, peak RSS {ours_rss:.0f} MiB (idle worker "
              f"{idle_rss:.0f} MiB), load {'/'.join(f'{v:.1f}' for v in loads['ours'])}", flush=True)
        distinct, _ = run_child([*me, "check", json.dumps({"files": result["files"]}), args.compression], env)
        peer_a_result, peer_a_rss = run_child([*me, "a", json.dumps(info), args.compression], env)
        loads["a"] = os.getloadavg()
        print(f"  (a): {peer_a_result['rows']:,} rows in {peer_a_result['seconds']:.1f} s, "
              f"peak RSS {peer_a_rss:.0f} MiB", flush=True)
        peer_b_result, peer_b_rss = run_child(
            [*me, "b", json.dumps({**info, "files": result["files"]}), args.compression], env)
        loads["b"] = os.getloadavg()
        rounds = [(result, peer_a_result)]
        for number in range(2, args.rounds + 1):
            rounds.append(another_round(me, worker, env, info, args, number=number))
    finally:
        moto.terminate()
        moto.wait()
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
            if args.backend == "postgres":
                recreate_database(args.database_url, create=False)
    assert result["rows"] == peer_a_result["rows"] == peer_b_result["rows"] == args.rows, (result, peer_a_result)
    assert distinct["distinct_ids"] == args.rows, distinct  # every run exported once
    report(args, result, ours_rss, peer_a_result, peer_a_rss, peer_b_result, peer_b_rss, idle_rss, loads)
    if len(rounds) > 1:
        ratios = [(o["rows"] / o["seconds"]) / (a["rows"] / a["seconds"]) for o, a in rounds]
        print(f"  per-round ours / (a): {', '.join(f'{r:.2f}' for r in ratios)}; median "
              f"{statistics.median(ratios):.2f} (round 1 as above; from round 2, (a) first in even rounds)")


def another_round(me: list[str], worker: list[str], env: dict, info: dict, args, *, number: int):
    """One more export by ours and one more run of (a), on the same rows; each checked for the row count."""
    def ours_once() -> dict:
        created, _ = run_child([*me, "create", json.dumps(info), args.compression], env)
        run_child(worker, env)
        return run_child([*me, "result", json.dumps(created), args.compression], env)[0]

    def peer_once() -> dict:
        return run_child([*me, "a", json.dumps(info), args.compression], env)[0]

    peer_first = number % 2 == 0
    if peer_first:
        peer, ours_result = peer_once(), ours_once()
    else:
        ours_result, peer = ours_once(), peer_once()
    assert ours_result["rows"] == peer["rows"] == args.rows, (ours_result["rows"], peer)
    load = "/".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"  round {number}: ours {ours_result['rows'] / ours_result['seconds']:,.0f} rows/s, (a) "
          f"{peer['rows'] / peer['seconds']:,.0f} rows/s ({'(a)' if peer_first else 'ours'} first), load {load}")
    return ours_result, peer


def recreate_database(url: str, create: bool = True) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(base.replace("postgres://", "postgresql://") + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def report(args, ours_result, ours_rss, a, a_rss, b, b_rss, idle_rss, loads) -> None:
    def rate(result):
        return result["rows"] / result["seconds"]

    def load(name):
        return "/".join(f"{value:.1f}" for value in loads[name])

    print(f"\nbulk export of {args.rows:,} runs ({args.backend}, compression {args.compression}, "
          f"{len(ours_result['files'])} file(s))")
    for label, result, rss, name in (("ours  run_worker export", ours_result, ours_rss, "ours"),
                                     ("(a)   cursor -> ParquetWriter", a, a_rss, "a"),
                                     ("(b)   write_table in memory", b, b_rss, "b")):
        print(f"  {label:<30} {rate(result):>10,.0f} rows/s  {result['seconds']:7.2f} s  peak RSS {rss:6.0f} MiB"
              f"  load average after it {load(name)}")
    print(f"  {'idle run_worker (no job)':<30} peak RSS {idle_rss:6.0f} MiB; the export added "
          f"{ours_rss - idle_rss:.0f} MiB")
    print(f"  ours / (a) = {rate(ours_result) / rate(a):.2f}   (target >= 0.8)   ours peak memory {ours_rss:.0f} MiB "
          "(target < 250)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
    else:
        main()

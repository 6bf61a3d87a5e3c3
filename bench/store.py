"""Benchmark: our DjangoStore against LangGraph's own stores, side by side in one run: put and search throughput.

On PostgreSQL: ours, PostgresStore (langgraph-checkpoint-postgres) and InMemoryStore. On SQLite: ours, SqliteStore
(langgraph-checkpoint-sqlite) and InMemoryStore. Each in two modes:

- `plain`: no index. Puts of small memories (`store.put`, one call per item, as a graph's node makes them) into
  10 users' namespaces, then searches: a user's namespace (the 10 most recent) and all users with a filter.
- `index`: store.index with a deterministic offline embedding function (`dims` 256, the same for every store), puts
  then searches with a `query` (the 10 best by cosine similarity). PostgresStore needs pgvector for an index, which
  these machines do not have, and SqliteStore sqlite-vec, which needs a Python whose sqlite3 loads extensions: a
  store that cannot index is shown as n/a.

Each round runs every store on empty tables, in rotating order. The script prints each store's median throughput
(operations per second, wall time) and the ratio of ours to the peer on the same database (their throughput / ours:
the time ours takes for the same work; target <= 1.25x against PostgresStore), and the median of per-round ratios.

    .venv/bin/python bench/store.py                         # both databases, both modes
    .venv/bin/python bench/store.py --backend postgres --mode plain --items 2000 --rounds 9

The PostgreSQL run uses its own database (created if missing, default `store_bench`); SQLite files go to a temporary
directory under data/, removed at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_support import bench_parser, each_backend_in_its_process, setup_django_on  # noqa: E402 - a sibling module: benches run as scripts

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/store_bench"
DIMS = 256
USERS = 10
WORDS = ("apple pie tree zebra sky noon blue red green car fast dog sleepy number favourite football shirt "
         "meeting moved standup trip plan history abacus research agent memory store search vector").split()


def main() -> None:
    parser = bench_parser(__doc__, postgres_url=DEFAULT_PG)
    parser.add_argument("--mode", choices=["plain", "index", "all"], default="all")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if each_backend_in_its_process(args.backend):
        return
    workdir = Path(tempfile.mkdtemp(prefix="bench-store-", dir=ROOT / "data"))
    try:
        setup_django_on(args.backend, postgres_url=args.postgres_url, sqlite_path=workdir / "ours.sqlite3")
        from django.core.management import call_command

        call_command("migrate", "chat", verbosity=0)
        print(f"[{args.backend}] load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for mode in ("plain", "index") if args.mode == "all" else (args.mode,):
            run(args.backend, mode, args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# --- the workload ------------------------------------------------------------------------------------


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Offline embeddings: the sum of a fixed random vector per word (numpy's generator, seeded by the word)."""
    import numpy as np

    vectors = []
    for text in texts:
        total = np.zeros(DIMS)
        for word in text.split():
            total += _word_vector(word)
        vectors.append(total.tolist())
    return vectors


_WORD_VECTORS: dict = {}


def _word_vector(word: str):
    import numpy as np

    if word not in _WORD_VECTORS:
        seed = int.from_bytes(word.encode()[:8].ljust(8, b"\0"), "little")
        _WORD_VECTORS[word] = np.random.default_rng(seed).standard_normal(DIMS)
    return _WORD_VECTORS[word]


def memory(i: int) -> dict:
    words = " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 7))
    return {"text": f"{words} {i}", "kind": i % 3, "n": i}


def workload(store, items: int, searches: int, mode: str) -> tuple[float, float]:
    """Seconds for the puts and for the searches."""
    started = time.perf_counter()
    for i in range(items):
        store.put(("users", f"u{i % USERS}", "memories"), f"m{i}", memory(i))
    puts = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(searches):
        if mode == "index":
            found = store.search(("users",), query=memory(i * 7)["text"], limit=10)
        elif i % 2:
            found = store.search(("users", f"u{i % USERS}"), limit=10)
        else:
            found = store.search(("users",), filter={"kind": i % 3}, limit=10)
        assert len(found) == 10, (store, i, len(found))
    return puts, time.perf_counter() - started


# --- the stores --------------------------------------------------------------------------------------


def index_config() -> dict:
    return {"dims": DIMS, "embed": embed_texts, "fields": ["text"]}


@contextlib.contextmanager
def ours(mode: str) -> Iterator:
    from django.db import connection

    from agentruntime.store.django_store import DjangoStore

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # as PostgresStore's tables are emptied: no dead rows left behind
            cursor.execute("TRUNCATE chat_storevector, chat_storeitem")
        else:
            cursor.execute("DELETE FROM chat_storevector")
            cursor.execute("DELETE FROM chat_storeitem")
    yield DjangoStore(scope="bench", index=index_config() if mode == "index" else None)


@contextlib.contextmanager
def in_memory(mode: str) -> Iterator:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore(index=index_config() if mode == "index" else None)


@contextlib.contextmanager
def postgres_store(mode: str, postgres_url: str) -> Iterator:
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(postgres_url) as store:
        store.setup()
        with store._cursor() as cursor:
            cursor.execute("TRUNCATE store")
        yield store


@contextlib.contextmanager
def sqlite_store(mode: str, path: Path) -> Iterator:
    from langgraph.store.sqlite import SqliteStore

    path.unlink(missing_ok=True)
    with SqliteStore.from_conn_string(str(path), index=index_config() if mode == "index" else None) as store:
        store.setup()
        # Same durability as ours (config/settings.py): WAL with synchronous=NORMAL.
        store.conn.execute("PRAGMA journal_mode=WAL")
        store.conn.execute("PRAGMA synchronous=NORMAL")
        yield store


def peers(backend: str, mode: str, args, workdir: Path) -> dict:
    if backend == "postgres":
        database = {"PostgresStore": lambda: postgres_store(mode, args.postgres_url)} if mode == "plain" else {}
    elif mode == "plain" or _sqlite_loads_extensions():
        database = {"SqliteStore": lambda: sqlite_store(mode, workdir / "peer.sqlite3")}
    else:
        database = {}
    return {"ours": lambda: ours(mode), **database, "InMemoryStore": lambda: in_memory(mode)}


def _sqlite_loads_extensions() -> bool:
    import sqlite3

    return hasattr(sqlite3.Connection, "enable_load_extension")


# --- the run -----------------------------------------------------------------------------------------


def run(backend: str, mode: str, args, workdir: Path) -> None:
    stores = peers(backend, mode, args, workdir)
    print(f"[{backend} {mode}] {args.items} puts then {args.searches} searches, {args.rounds} rounds (+1 warm-up); "
          f"stores: {', '.join(stores)}")
    if backend == "postgres" and mode == "index":
        print("  PostgresStore: n/a (an index needs pgvector, which is not installed here)")
    if backend == "sqlite" and mode == "index" and "SqliteStore" not in stores:
        print("  SqliteStore: n/a (an index needs sqlite-vec, and this Python's sqlite3 cannot load extensions)")
    times: dict[str, dict[str, list[float]]] = {name: {"put": [], "search": []} for name in stores}
    names = list(stores)
    for n in range(args.rounds + 1):
        order = names[n % len(names):] + names[: n % len(names)]
        for name in order:
            with stores[name]() as store:
                puts, searches = workload(store, args.items, args.searches, mode)
            if n > 0:
                times[name]["put"].append(puts)
                times[name]["search"].append(searches)
            label = "warm-up" if n == 0 else f"round {n}"
            print(f"  {label:8} {name:14} put {args.items / puts:8.0f}/s  search {args.searches / searches:8.0f}/s")
    for phase, count in (("put", args.items), ("search", args.searches)):
        mine = times["ours"][phase]
        line = f"[{backend} {mode}] {phase}: ours {count / statistics.median(mine):.0f}/s"
        for name in names[1:]:
            theirs = times[name][phase]
            ratio = statistics.median(mine) / statistics.median(theirs)
            # Each round runs all stores back to back, so its own ratio cancels slow drifts in machine load.
            paired = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
            line += (f"; {name} {count / statistics.median(theirs):.0f}/s, ours takes {ratio:.2f}x "
                     f"(per-round {paired:.2f}x)")
        print(line)


if __name__ == "__main__":
    main()

"""Where ingestion spends its time, for the benchmark and for operators chasing a slow trace store.

With TRACING_INGEST_LOG set to a file path, each ingestion request appends one JSON line:
`{"route", "encoding", "runs", "bytes", "read", "decompress", "parse", "validate", "wait", "database",
"total"}` (seconds; `wait` is the time spent queuing for SQLite's single writer). Unset, the
stopwatch only adds a few clock reads per request.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager

from django.conf import settings

log = logging.getLogger("tracing")
_write_lock = threading.Lock()


class Stopwatch:
    def __init__(self):
        self.started = time.perf_counter()
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - start

    def record(self, **facts) -> None:
        """Append this request's line to TRACING_INGEST_LOG, when it is set."""
        path = settings.TRACING_INGEST_LOG
        if not path:
            return
        line = {**facts, **{k: round(v, 6) for k, v in self.phases.items()},
                "total": round(time.perf_counter() - self.started, 6)}
        try:
            with _write_lock, open(path, "a") as out:
                out.write(json.dumps(line) + "\n")
        except OSError as exc:
            log.warning("could not write TRACING_INGEST_LOG %s: %s", path, exc)

from __future__ import annotations

import json

import pytest

from tests.support_processes import LiveServer


@pytest.fixture
def ingest_server(transactional_db, tmp_path):
    """The service under Daphne, recording each ingestion request's route and encoding (TRACING_INGEST_LOG)."""
    log_path = tmp_path / "ingest.jsonl"
    server = LiveServer(env={"TRACING_INGEST_LOG": str(log_path)}, log_path=tmp_path / "server.log").start()

    def requests() -> list[dict]:
        return [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []

    server.ingest_requests = requests
    yield server
    server.stop()

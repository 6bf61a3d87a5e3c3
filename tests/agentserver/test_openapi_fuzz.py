"""Schemathesis against a revision's own Agent Server document (GET /openapi.json of `serve_graphs`): no request
it can make is answered with a 5xx, and every status an operation answers is one its document lists.

Random requests per operation (SCHEMA_FUZZ_EXAMPLES / 3, as tests/test_schema_fuzz.py counts them: 8 in CI's first
pass, 3 on PostgreSQL), within CI's time. SCHEMA_FUZZ_COVERAGE=1 adds the boundary values of every parameter
(schemathesis' coverage phase: about 4,500 requests, 4 minutes), which found the statuses the document lacked.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.agentserver.support_sdk import PROJECT
from tests.support_processes import BASE_DIR, child_env, graphs_served

pytestmark = [pytest.mark.live]

EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "25"))
SEED = os.environ.get("SCHEMA_FUZZ_SEED", "13")
COVERAGE = os.environ.get("SCHEMA_FUZZ_COVERAGE") == "1"


def test_every_agent_server_operation_answers_as_its_document_says(transactional_db, tmp_path):
    phases = "examples,coverage,fuzzing" if COVERAGE else "examples,fuzzing"
    examples = max(1, EXAMPLES // 3)
    config = tmp_path / "schemathesis.toml"
    config.write_text("\n".join([f"seed = {SEED}", "workers = 2", "request-timeout = 30", "[generation]",
                                 f"max-examples = {examples}", 'database = "none"']) + "\n")
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
           "CHAT_TRACING_PROJECT": ""}
    with graphs_served(BASE_DIR / PROJECT / "langgraph.json", env=env, log_path=tmp_path / "served.log") as url:
        result = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{url}/openapi.json",
             "--checks", "not_a_server_error,status_code_conformance", "--phases", phases, "--no-color"],
            cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=540)
    (tmp_path / "schemathesis.log").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, (f"schemathesis failed:\n{result.stdout[-20000:]}\n{result.stderr[-3000:]}\n"
                                    f"server log tail:\n{(tmp_path / 'served.log').read_text()[-4000:]}")

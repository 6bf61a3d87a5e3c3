"""`serve`: migrations, demo data, Daphne plus a worker, supervised, stopped cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.support import BASE_DIR, free_port, wait_for_http

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]


def test_serve_sets_up_serves_supervises_and_stops_cleanly(tmp_path):
    port = free_port()
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": "", "PYTHONUNBUFFERED": "1",
           "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}
    env.pop("TEST_DB_SUFFIX", None)
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "manage.py", "serve", "--port", str(port)], cwd=BASE_DIR,
                                   env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", process=process, describe=log_path.read_text,
                      timeout=90)
        output = log_path.read_text()
        demo_key = output.split("Demo API key:")[1].split()[0]
        response = httpx.get(f"http://127.0.0.1:{port}/api/v1/workspaces", headers={"X-Api-Key": demo_key})
        assert response.status_code == 200 and response.json()[0]["name"] == "demo"
        assert "Admin user:     admin /" in output

        worker_pid = _child_pid(process.pid, "run_worker")
        os.kill(worker_pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _child_pid(process.pid, "run_worker") in (None, worker_pid):
            time.sleep(0.2)
        assert _child_pid(process.pid, "run_worker") not in (None, worker_pid)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    assert code == 0
    assert _child_pid(process.pid, "daphne") is None
    assert "stopped" in log_path.read_text()


def test_serve_reuses_the_demo_key_on_the_next_start(tmp_path):
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": ""}
    env.pop("TEST_DB_SUFFIX", None)
    keys = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                              "from django.core.management import call_command; call_command('migrate', verbosity=0);"
                              "from accounts.services import demo_credentials_ensure as d; import json;"
                              "w, k = d(); print(json.dumps([str(w.id), k]))"],
                             cwd=BASE_DIR, env=env, capture_output=True, text=True, check=True)
        keys.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert keys[0] == keys[1]


def _child_pid(parent: int, needle: str) -> int | None:
    result = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(parent)], capture_output=True, text=True)
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        if needle in args:
            return int(pid)
    return None

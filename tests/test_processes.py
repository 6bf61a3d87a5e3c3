"""`serve`: migrations, demo data, Daphne plus a worker, supervised, stopped cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import httpx
import pytest

from tests.deployments.support_projects import make_project, tarball
from tests.support_processes import BASE_DIR, ChildProcess, free_port, wait_for_http

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]


def start_serve(tmp_path, port: int, *arguments: str) -> tuple[subprocess.Popen, Path]:
    """`manage.py serve --port <port>` on a fresh SQLite data folder under tmp_path; the process and its log."""
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": "", "PYTHONUNBUFFERED": "1",
           "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}
    env.pop("TEST_DB_SUFFIX", None)
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "manage.py", "serve", "--port", str(port), *arguments],
                                   cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, log_path


def test_serve_sets_up_serves_supervises_and_stops_cleanly(tmp_path):
    port = free_port()
    process, log_path = start_serve(tmp_path, port)
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


def test_serve_says_what_it_does_while_it_starts_and_says_serving_only_once_the_port_answers(tmp_path):
    port = free_port()
    process, log_path = start_serve(tmp_path, port, "--workers", "0")
    try:
        deadline = time.monotonic() + 90
        while "Serving on" not in log_path.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        output = log_path.read_text()
        assert "Serving on" in output, output
        # Read the moment the line appeared: the port it names answers already.
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        lines = ["Migrating the database", "Database migrated.", "Starting the server", "Serving on"]
        assert [output.index(line) for line in lines] == sorted(output.index(line) for line in lines), output
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def test_serve_on_any_port_hands_out_upload_urls_on_that_port_when_public_base_url_is_unset(
        transactional_db, api_client, tmp_path):
    port = free_port()
    serve = ChildProcess("serve", "--port", str(port), "--workers", "0", "--no-setup", log_path=tmp_path / "serve.log",
                         env={"PUBLIC_BASE_URL": "", "DEPLOY_ROOT": str(tmp_path / "deploy-root")}).start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/healthz", process=serve.process, describe=serve.output, timeout=90)
        headers = {"X-Api-Key": api_client.raw_key, "X-Tenant-Id": str(api_client.workspace.id)}
        deployment = httpx.post(f"{base}/v2/deployments", headers=headers, json={
            "name": "any-port", "source": "internal_source", "source_config": {}, "source_revision_config": {}})
        assert deployment.status_code == 201, deployment.text
        assert deployment.json()["source_config"]["custom_url"] == f"{base}/deployments/{deployment.json()['id']}"
        upload = httpx.post(f"{base}/v2/deployments/{deployment.json()['id']}/upload-url", headers=headers, json={})
        assert upload.json()["upload_url"].startswith(f"{base}/v2/deployments/uploads/")
        put = httpx.put(upload.json()["upload_url"], content=tarball(make_project(tmp_path / "project")),
                        headers={"Content-Type": "application/gzip"})
        assert put.status_code == 200, put.text
    finally:
        assert serve.stop() == 0


def test_serve_sh_on_a_taken_port_exits_at_once_naming_the_port_and_the_option_and_leaves_no_process(tmp_path):
    env = {**os.environ, "DATA_DIR": str(tmp_path), "DATABASE_URL": "", "PYTHONUNBUFFERED": "1"}
    env.pop("TEST_DB_SUFFIX", None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = subprocess.Popen([str(BASE_DIR / "scripts" / "serve.sh"), "--port", str(port)], cwd=BASE_DIR,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        try:
            # Bounded only so a regression (the old restart loop) fails instead of hanging the suite.
            output, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            pytest.fail(f"serve.sh kept running on a taken port:\n{output[-3000:]}")
    assert process.returncode != 0, output
    assert f"Port {port} on 127.0.0.1 is not available" in output and "--port" in output, output
    assert "restarting" not in output and "Serving on" not in output, output
    assert _session_processes(process.pid) == []


def _session_processes(session: int) -> list[str]:
    """Every live process of a session (the children `serve` would have started), by its command line."""
    result = subprocess.run(["ps", "-e", "-o", "sid=,args="], capture_output=True, text=True, check=True)
    return [args for sid, _, args in (line.strip().partition(" ") for line in result.stdout.splitlines())
            if sid == str(session)]


@pytest.mark.parametrize("environ, host, url", [
    ({}, "0.0.0.0", "http://127.0.0.1:8123"),
    ({}, "::", "http://[::1]:8123"),
    ({"PUBLIC_BASE_URL": ""}, "192.0.2.7", "http://192.0.2.7:8123"),
    ({"PUBLIC_BASE_URL": "https://agents.example.com"}, "127.0.0.1", "https://agents.example.com"),
])
def test_serve_gives_its_children_a_public_base_url_that_reaches_it_unless_one_is_set(environ, host, url):
    from core.management.commands.serve import children_environment

    assert children_environment({"PATH": "/bin", **environ}, host, 8123) == {"PATH": "/bin", "PUBLIC_BASE_URL": url}


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


@pytest.mark.django_db
def test_serve_runs_the_setups_the_apps_registered_and_core_imports_none_of_them(settings, tmp_path):
    from core.management.commands.serve import Command
    from core.registry import SERVE_SETUPS

    settings.DATA_DIR = tmp_path
    out = StringIO()
    Command(stdout=out)._setup()
    assert list(SERVE_SETUPS) == ["accounts.demo_credentials", "accounts.admin_user"]
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Migrating the database") and lines[1] == "Database migrated."
    assert lines[2].startswith("Demo workspace: demo (") and lines[3].startswith("Demo API key:   lgk_")
    assert lines[4].startswith("Admin user:     admin / ")
    apps = "accounts|agentauth|agentserver|chat|config|deployments|exports|tracing"
    core_imports = subprocess.run(["grep", "-rlE", rf"^\s*(from|import) ({apps})\b", "core"], cwd=BASE_DIR,
                                  capture_output=True, text=True).stdout
    assert core_imports == ""


def _child_pid(parent: int, needle: str) -> int | None:
    result = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(parent)], capture_output=True, text=True)
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        if needle in args:
            return int(pid)
    return None

"""Helpers for tests that start real processes: free ports, the test database's URL, children."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.db import connection

from core.process_identity import stop_process

BASE_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_env() -> dict[str, str]:
    """Environment that points a child process at the database this test uses."""
    settings_dict = connection.settings_dict
    if connection.vendor == "sqlite":
        return {"SQLITE_PATH": str(settings_dict["NAME"]), "DATABASE_URL": ""}
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return {"DATABASE_URL": f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"}


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(test_database_env())
    env.update({"PYTHONUNBUFFERED": "1", "DJANGO_SETTINGS_MODULE": "config.settings"})
    env.pop("TEST_DB_SUFFIX", None)
    env.update(extra or {})
    return env


class ChildProcess:
    """A `manage.py` command run as a real child process, stopped (and reaped) on exit."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, log_path: Path | None = None):
        self.args = [sys.executable, str(BASE_DIR / "manage.py"), *args]
        self.env = child_env(env)
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> ChildProcess:
        out = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(self.args, cwd=BASE_DIR, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def stop(self, timeout: float = 15) -> int | None:
        if self.process is None:
            return None
        stop_process(self.process, timeout)
        return self.process.returncode

    def kill(self, sig: int) -> None:
        os.killpg(self.process.pid, sig)
        self.process.wait()


class LiveServer(ChildProcess):
    """Daphne serving the whole ASGI app on a free loopback port."""

    def __init__(self, env: dict[str, str] | None = None, log_path: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        extra = {"PUBLIC_BASE_URL": self.url, **(env or {})}
        super().__init__(env=extra, log_path=log_path)
        self.args = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                     "config.asgi:application"]

    def start(self) -> LiveServer:
        super().start()
        wait_for_http(f"{self.url}/healthz", process=self.process, describe=self.output)
        return self


@contextmanager
def graphs_served(config: Path, *, env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`manage.py serve_graphs` for the langgraph.json `config` on a free port, as a deployed revision runs it;
    yields its URL once it answers."""
    port = free_port()
    served = ChildProcess("serve_graphs", "--config", str(config), "--port", str(port), env=env,
                          log_path=log_path).start()
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=served.process, timeout=60, describe=served.output)
        yield f"http://127.0.0.1:{port}"
    finally:
        served.stop()


def live_server_fixture(env: dict[str, str], *, name: str):
    """A module-scoped fixture: Daphne serving the whole app on the test database with `env`, its log in a
    temporary folder named after `name`."""

    @pytest.fixture(scope="module")
    def server(django_db_setup, django_db_blocker, tmp_path_factory):
        with django_db_blocker.unblock():
            started = LiveServer(env=env, log_path=tmp_path_factory.mktemp(name) / "server.log").start()
        yield started
        started.stop()

    return server


def wait_for(predicate, *, timeout: float = 120, interval: float = 0.3, describe=lambda: ""):
    """Poll `predicate` until it returns something true, and return that; fail with `describe()` at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s\n{describe()}")


def server_fixture(start, *, scope: str = "session"):
    """A fixture holding one server, `start()`, for the whole `scope`, stopped at its end."""

    @pytest.fixture(scope=scope)
    def server():
        started = start()
        yield started
        started.stop()

    return server


def wait_for_http(url: str, *, process: subprocess.Popen, describe, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered:\n{describe()}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout}s:\n{describe()}")

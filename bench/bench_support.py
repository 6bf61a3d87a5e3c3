"""Shared set-up of the benchmarks that run our Django code in-process on a chosen database."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database named in `url` when it does not exist yet."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    maintenance = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def recreate_database(url: str) -> None:
    """Drop the PostgreSQL database named in `url` (closing its sessions) and create it empty: a fresh start per run."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    maintenance = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django_on(backend: str, *, postgres_url: str, sqlite_path: Path) -> None:
    """Point Django at PostgreSQL (`postgres_url`) or at the SQLite file `sqlite_path`, and set it up."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.pop("TEST_DB_SUFFIX", None)
    if backend == "postgres":
        ensure_database(postgres_url)
        os.environ["DATABASE_URL"] = postgres_url
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ["SQLITE_PATH"] = str(sqlite_path)
    sys.path.insert(0, str(ROOT))
    import django
    from django.conf import settings

    django.setup()
    # As in production: no per-query debug logging.
    settings.DEBUG = False


def bench_parser(description: str | None, *, postgres_url: str) -> argparse.ArgumentParser:
    """The command line every in-process benchmark shares (--backend, --postgres-url); the caller adds its own."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--postgres-url", default=postgres_url)
    return parser


def each_backend_in_its_process(backend: str) -> bool:
    """With `--backend all`, run this script again once per database and return True (the caller then stops):
    Django's settings are per process, so each database gets a child process."""
    if backend != "all":
        return False
    for each in ("sqlite", "postgres"):
        argv = [arg for arg in sys.argv[1:] if not arg.startswith("--backend")]
        subprocess.run([sys.executable, sys.argv[0], *argv, "--backend", each], check=True)
    return True


def stop_process_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM a server started in its own process group, then SIGKILL it if it has not exited within `timeout`."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def production_env() -> dict[str, str]:
    """Environment for a child process that runs as in production: DEBUG off, with the keys that requires."""
    from cryptography.fernet import Fernet

    return {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(40),
            "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(), "ALLOWED_HOSTS": "127.0.0.1,localhost"}


def free_port(base: int | None = None) -> int:
    """A free loopback port: the first of `base`, `base` + 1, ... (a range agreed with others on this machine), else
    any."""
    for port in range(base, base + 100) if base else ():
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, process: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    """Return once `url` answers 200; exit with the process's log when it exits first or `timeout` passes."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the process exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=1, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url} did not answer in {timeout}s:\n{log.read_text()[-3000:]}")

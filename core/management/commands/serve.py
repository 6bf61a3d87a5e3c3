"""Run the whole service: migrate, run the apps' setups (the demo workspace), then supervise Daphne and a worker.

Each child gets a stable identity (PROCESS_IDENTITY, "host:serve-<port>:web-0") that its restart keeps, so a
restarted Daphne fails the chat runs its killed predecessor owned before it accepts requests. One `serve` per host
and port holds a lock for as long as it runs: two live processes never share an identity.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from core.process_identity import stop_process
from core.registry import SERVE_SETUPS

BASE_DIR = Path(settings.BASE_DIR)


class Child:
    """One supervised child process, restarted with a growing delay when it crashes."""

    def __init__(self, name: str, argv: list[str], out, identity: str, env: dict[str, str]):
        self.name, self.argv, self.out, self.identity, self.env = name, argv, out, identity, env
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self.next_start = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, cwd=BASE_DIR,
                                        env={**self.env, "PROCESS_IDENTITY": self.identity})
        self.out.write(f"started {self.name} (pid {self.process.pid})\n")

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def supervise(self) -> None:
        if self.process is None or self.process.poll() is None:
            return
        now = time.monotonic()
        if self.next_start == 0.0:
            self.restarts += 1
            self.next_start = now + min(30.0, 0.5 * 2 ** min(self.restarts, 6))
            self.out.write(f"{self.name} exited with {self.process.returncode}; restarting\n")
        elif now >= self.next_start:
            self.next_start = 0.0
            self.start()

    def stop(self, timeout: float) -> None:
        if self.process:
            stop_process(self.process, timeout)


class Command(BaseCommand):
    help = "Migrate, ensure the demo workspace and key, and run Daphne plus run_worker, supervised."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="How many run_worker processes.")
        parser.add_argument("--no-setup", action="store_true", help="Skip migrations and the demo data.")

    def handle(self, *args, host, port, workers, no_setup, **options):
        lock = _hold_port_lock(port)
        _check_port_free(host, port)
        if not no_setup:
            self._setup()
        prefix = f"{socket.gethostname()}:serve-{port}"
        env = children_environment(os.environ, host, port)
        children = [Child("daphne", [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                                     "config.asgi:application"], self.stdout, f"{prefix}:web-0", env)]
        children += [Child(f"worker-{i + 1}", [sys.executable, "manage.py", "run_worker"], self.stdout,
                           f"{prefix}:worker-{i + 1}", env) for i in range(workers)]
        stopping = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stopping.append(True))
        for child in children:
            child.start()
        self.stdout.write("Starting the server (Daphne loads the apps for a few seconds)...\n")
        announced = False
        try:
            while not stopping:
                # A Daphne that exited because another process took its port would fail every restart.
                if children[0].exited():
                    _check_port_free(host, port)
                for child in children:
                    child.supervise()
                # Said once the port answers, not when Daphne was merely started: a reader opens the URL at once.
                if not announced and _accepts(host, port):
                    self.stdout.write(f"Serving on http://{host}:{port} (Ctrl-C stops everything)\n")
                    announced = True
                time.sleep(0.3)
        finally:
            self.stdout.write("stopping...\n")
            for child in children:
                child.stop(timeout=15)
            self.stdout.write("stopped\n")
            lock.close()

    def _setup(self) -> None:
        self.stdout.write("Migrating the database (a new one takes up to a minute)...\n")
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.\n")
        # What the apps registered (core.registry.serve_setup): accounts' demo workspace, key and admin user.
        for setup in SERVE_SETUPS.values():
            setup(self.stdout)


def children_environment(environ, host: str, port: int) -> dict[str, str]:
    """The children's environment: PUBLIC_BASE_URL, when it is not set, follows the address served, so the
    absolute URLs the service hands out (uploads, deployments) work on whatever --host and --port say."""
    env = dict(environ)
    if not env.get("PUBLIC_BASE_URL"):
        reachable = _reachable(host)
        env["PUBLIC_BASE_URL"] = f"http://{f'[{reachable}]' if ':' in reachable else reachable}:{port}"
    return env


def _reachable(host: str) -> str:
    """An address of `host` that answers: listening on every interface, this host's loopback address."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((_reachable(host), port), timeout=0.5):
            return True
    except OSError:
        return False


def _check_port_free(host: str, port: int) -> None:
    """Fail at once when something else listens on the address: Daphne would exit on it, and its supervisor restart
    it forever, while the worker kept running. Binds the way Daphne (Twisted) does, with SO_REUSEADDR, so a port whose
    last connections are in TIME_WAIT counts as free, as it is for Daphne."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            raise CommandError(
                f"Port {port} on {host} is not available ({error.strerror}). Stop what listens there, or serve on "
                f"another port with --port: ./scripts/serve.sh --port {port + 1}") from None


def _hold_port_lock(port: int):
    """An exclusive lock on this host's `serve` for `port`, held until the file is closed (or the process dies)."""
    path = Path(tempfile.gettempdir()) / f"agent-ops-serve-{port}.lock"
    lock = open(path, "a")  # noqa: SIM115 - held for the command's lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise CommandError(f"Another `serve` on this host already uses port {port} ({path} is locked).") from None
    return lock

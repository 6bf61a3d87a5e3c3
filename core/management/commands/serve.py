"""Run the whole service: migrate, ensure the demo workspace, then supervise Daphne and a worker."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from accounts.services import admin_user_ensure, demo_credentials_ensure

BASE_DIR = Path(settings.BASE_DIR)


class Child:
    """One supervised child process, restarted with a growing delay when it crashes."""

    def __init__(self, name: str, argv: list[str], out):
        self.name, self.argv, self.out = name, argv, out
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self.next_start = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, cwd=BASE_DIR)
        self.out.write(f"started {self.name} (pid {self.process.pid})\n")

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
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Command(BaseCommand):
    help = "Migrate, ensure the demo workspace and key, and run Daphne plus run_worker, supervised."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="How many run_worker processes.")
        parser.add_argument("--no-setup", action="store_true", help="Skip migrations and the demo data.")

    def handle(self, *args, host, port, workers, no_setup, **options):
        if not no_setup:
            self._setup()
        children = [Child("daphne", [sys.executable, "-m", "daphne", "-b", host, "-p", str(port),
                                     "config.asgi:application"], self.stdout)]
        children += [Child(f"worker-{i + 1}", [sys.executable, "manage.py", "run_worker"], self.stdout)
                     for i in range(workers)]
        stopping = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stopping.append(True))
        for child in children:
            child.start()
        self.stdout.write(f"Serving on http://{host}:{port} (Ctrl-C stops everything)\n")
        while not stopping:
            for child in children:
                child.supervise()
            time.sleep(0.3)
        self.stdout.write("stopping...\n")
        for child in children:
            child.stop(timeout=15)
        self.stdout.write("stopped\n")

    def _setup(self) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Database migrated.\n")
        workspace, raw_key = demo_credentials_ensure()
        self.stdout.write(f"Demo workspace: {workspace.name} ({workspace.id})\n")
        self.stdout.write(f"Demo API key:   {raw_key}\n")
        username, password = admin_user_ensure()
        if password:
            self.stdout.write(f"Admin user:     {username} / {password} (shown once)\n")
        else:
            self.stdout.write(f"Admin user:     {username} (password unchanged)\n")

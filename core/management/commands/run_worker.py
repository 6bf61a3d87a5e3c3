"""Claim and run background jobs and periodic jobs until stopped (SIGINT or SIGTERM)."""

from __future__ import annotations

import signal
import threading

from django.core import checks
from django.core.checks.registry import registry
from django.core.management.base import BaseCommand

from core.registry import SERVICES
from core.worker import Worker


class Command(BaseCommand):
    help = "Run background jobs (export runs, revision steps) and periodic jobs."

    def add_arguments(self, parser):
        parser.add_argument("--queues", nargs="*", default=None, help="Only claim jobs from these queues.")
        parser.add_argument("--no-periodic", action="store_true", help="Do not run periodic jobs.")
        parser.add_argument("--once", action="store_true", help="Run what is due once, then exit.")

    def check(self, *args, **kwargs):
        """Every system check but the URL ones. Those import every API view, and LangGraph with them: about
        40 MiB that a worker, which serves no URL, would carry all its life. `manage.py check` and `serve` run them."""
        url_checks = {check for check in registry.registered_checks if checks.Tags.urls in check.tags}
        registry.registered_checks -= url_checks
        try:
            return super().check(*args, **kwargs)
        finally:
            registry.registered_checks |= url_checks

    def handle(self, *args, queues, no_periodic, once, **options):
        worker = Worker(queues=queues, run_periodic=not no_periodic)
        if once:
            while worker.run_once():
                pass
            return
        stop = threading.Event()
        # Finish the job in hand, then exit: its lease is released cleanly.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        services = [threading.Thread(target=func, args=(stop,), name=name, daemon=True)
                    for name, func in SERVICES.items()]
        for thread in services:
            thread.start()
        worker.run_forever(stop)
        for thread in services:
            thread.join(timeout=30)

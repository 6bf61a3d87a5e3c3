"""Serve a project's graphs over the Agent Server API and the Agent Streaming Protocol: every revision process.

Every graph of the langgraph.json is served; `run.start`'s `assistant_id` picks one by its key, and "_" or an
unknown id picks the first.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import threading
import traceback
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from agentruntime import services as chat_services
from agentruntime.selectors import get_served_graph
from agentruntime.services import StoreConfigError, configure_graphs, thread_ttl_configure
from core.worker import Worker
from deployments.serving.process import configure_project_store, project_graph_specs, project_thread_ttl
from deployments.serving.user_errors import user_error

log = logging.getLogger("deployments.serve_graphs")
# pg_advisory_lock's key for migrating a deployment's database (any constant: the database is the deployment's own).
MIGRATION_LOCK_KEY = 7_246_025


class Command(BaseCommand):
    help = "Serve the graphs of a langgraph.json (the Agent Server API, the chat protocol under /api/threads, /ok)."
    # The runner builds this process's whole environment; the service's deploy-time checks are not its concern.
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--config", required=True, help="Path to langgraph.json.")
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, config, port, host, **options):
        try:
            specs = project_graph_specs(config)
            # Threads expire as the project's checkpointer.ttl says (agentruntime.thread_ttl).
            thread_ttl_configure(project_thread_ttl(config))
        except (OSError, ValueError) as exc:
            raise CommandError(f"Cannot read {config}: {exc}") from None
        if not specs:
            raise CommandError(f"{config} lists no graphs.")
        migrate_in_child()
        try:
            configure_project_store(config)
        except StoreConfigError as exc:
            raise CommandError(str(exc)) from None
        configure_graphs(specs)
        # Load them all now: a graph that cannot load fails the start (and the deploy), not the first request.
        for name in specs:
            self._load(name, project=Path(config).resolve().parent)
        # The deployment's database is shared with its other processes (replicas, the revision this one replaces), so
        # only the runs whose process is known to be gone (exited on this host, or silent past its lease) are ended
        # or queued again now: a restart after a crash frees their threads at once.
        swept = chat_services.runs_sweep_dead(stale_seconds=settings.CHAT_RUN_STALE_SECONDS)
        if swept:
            self.stdout.write(f"Marked {len(swept)} run(s) of a stopped process as failed.")
        for name, spec in specs.items():
            self.stdout.write(f"Serving graph {name!r} ({spec})")
        # run.start's assistant_id picks a graph by its name; "_" or an unknown id picks the first.
        self.stdout.write(f"Listening on http://{host}:{port}; default graph {next(iter(specs))!r}")
        self._start_periodic_jobs()
        self._run_daphne(host, port)

    def _load(self, name: str, *, project: Path) -> None:
        """Load graph `name`, or exit with its error as the project's author reads it (their file and frames)."""
        try:
            get_served_graph(name)
        except Exception as exc:
            error = user_error(exc, project=project)
            if error.traceback:
                self.stderr.write("\n".join(error.traceback))
            raise CommandError(f"Graph {name!r} failed to load: {error.reason}") from None

    def _start_periodic_jobs(self) -> None:
        """The periodic jobs (dead-run sweep, thread TTLs, event retention) on a thread: no run_worker serves this
        process's own database. It claims no queued jobs (a revision has none)."""
        worker = Worker(run_periodic=True, claim_jobs=False)
        threading.Thread(target=worker.run_forever, args=(threading.Event(),), name="periodic-jobs",
                         daemon=True).start()

    def _run_daphne(self, host: str, port: int) -> None:
        from deployments.serving import lean

        lean.import_daphne()
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from deployments.serving.asgi import application

        Server(application=application, endpoints=build_endpoint_description_strings(host=host, port=port),
               verbosity=0).run()


def migrate_in_child() -> None:
    """Migrate the process's database in a forked child, which exits when done.

    Loading and applying the migrations leaves about 8 MiB behind in the process that does it (model states, the
    allocator's fragments), which a server would keep for its whole life. Without fork, or once threads run (a fork
    would copy their locks held), it migrates in this process.
    """
    if not hasattr(os, "fork") or threading.active_count() > 1:
        migrate_locked()
        return
    connections.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never return into the parent's code
        code = 1
        try:
            migrate_locked()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise CommandError("Migrating the database failed (see the error above).")


def migrate_locked() -> None:
    """Apply the runtime's migrations while holding the database's migration lock.

    Every process of a deployment migrates its one database when it starts: replicas start together, and a new
    revision starts while the old one serves. The lock makes them take turns (the second finds nothing to do); the
    migrations themselves only add while a previous revision may still serve (docs/deployments.md).
    """
    with _migration_lock():
        call_command("migrate", interactive=False, verbosity=0)


@contextlib.contextmanager
def _migration_lock():
    database = connections["default"]
    if database.vendor == "postgresql":
        with database.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK_KEY])
        try:
            yield
        finally:
            with database.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK_KEY])
        return
    with open(f"{database.settings_dict['NAME']}.migrate-lock", "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)

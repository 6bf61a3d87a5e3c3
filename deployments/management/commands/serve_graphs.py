"""Serve a project's graphs over the Agent Streaming Protocol: the entry point of every revision process."""

from __future__ import annotations

import logging

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from chat import graph_runtime
from chat import services as chat_services
from deployments.serving import project_graph_specs

log = logging.getLogger("deployments.serve_graphs")


class Command(BaseCommand):
    help = "Serve the graphs of a langgraph.json (the chat protocol routes under /api/threads, and /ok)."
    # The runner builds this process's whole environment; the service's deploy-time checks are not its concern.
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--config", required=True, help="Path to langgraph.json.")
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, config, port, host, **options):
        try:
            specs = project_graph_specs(config)
        except (OSError, ValueError) as exc:
            raise CommandError(f"Cannot read {config}: {exc}") from None
        if not specs:
            raise CommandError(f"{config} lists no graphs.")
        name, spec = next(iter(specs.items()))
        graph_runtime.configure(spec)
        # Load now: a graph that cannot load fails the start (and the deploy), not the first request.
        graph_runtime.get_served_graph()
        call_command("migrate", interactive=False, verbosity=0)
        # This process is the database's only user: a run still marked running died with a previous process
        # (a crash, a restart by the reconciler). Fail it now, or its thread would refuse new runs.
        swept = chat_services.runs_sweep_dead(stale_seconds=0)
        if swept:
            self.stdout.write(f"Marked {len(swept)} run(s) of a previous process as failed.")
        self.stdout.write(f"Serving graph {name!r} ({spec}) on http://{host}:{port}")
        if len(specs) > 1:
            # The chat protocol code serves one graph per process; see the README.
            self.stdout.write(f"Only the first graph is served; not served: {', '.join(list(specs)[1:])}")
        self._run_daphne(host, port)

    def _run_daphne(self, host: str, port: int) -> None:
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from deployments.serving_asgi import application

        Server(application=application, endpoints=build_endpoint_description_strings(host=host, port=port),
               verbosity=0).run()

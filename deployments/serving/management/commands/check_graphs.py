"""Load every graph of a langgraph.json the way serve_graphs will, and report each one (used by builds)."""

from __future__ import annotations

import traceback

from django.core.management.base import BaseCommand, CommandError

from chat import store_config
from deployments.serving.process import configure_project_store, load_project_graphs


class Command(BaseCommand):
    help = "Import and compile each graph listed in a langgraph.json; exit 1 if any fails."
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--config", required=True, help="Path to langgraph.json.")

    def handle(self, *args, config, **options):
        try:
            graphs = load_project_graphs(config)
        except Exception as exc:
            self.stderr.write("".join(traceback.format_exception(exc)))
            raise CommandError(f"Loading the graphs failed: {type(exc).__name__}: {exc}") from None
        try:
            configure_project_store(config)  # the store's embedding function loads, or the build fails here
        except store_config.StoreConfigError as exc:
            raise CommandError(str(exc)) from None
        for name, served in graphs.items():
            nodes = ", ".join(n for n in served.graph.get_graph().nodes if not n.startswith("__"))
            self.stdout.write(f"graph {name!r}: OK ({type(served.graph).__name__}; nodes: {nodes or '-'})")

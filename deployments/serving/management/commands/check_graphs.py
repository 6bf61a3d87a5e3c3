"""Load every graph of a langgraph.json, and the project's own app (http.app), the way serve_graphs will, and report
each one (used by builds)."""

from __future__ import annotations

import traceback

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chat import store_config
from chat.graph_runtime import GraphLoadError
from deployments.serving.custom_routes import load_custom_app
from deployments.serving.process import configure_project_store, load_project_graphs


class Command(BaseCommand):
    help = "Import and compile each graph listed in a langgraph.json, and its http.app; exit 1 if any fails."
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
        self._check_custom_app(settings.LANGGRAPH_HTTP.get("app"))

    def _check_custom_app(self, spec: str | None) -> None:
        """Import langgraph.json's http.app (the runner passes the section in LANGGRAPH_HTTP), as serve_graphs will."""
        if not spec:
            return
        try:
            app = load_custom_app(spec)
        except GraphLoadError as exc:
            raise CommandError(str(exc)) from None
        except Exception as exc:
            self.stderr.write("".join(traceback.format_exception(exc)))
            raise CommandError(f"http.app {spec!r} failed to load: {type(exc).__name__}: {exc}") from None
        self.stdout.write(f"http.app: OK ({type(app).__name__} with {len(app.routes)} route(s))")

"""Load every graph of a langgraph.json, and the project's own app (http.app), the way serve_graphs will, and report
each one (used by builds).

A failure is told as the project's author reads it (deployments.serving.user_errors): their file relative to the
project with its line, and their own frames. With --report the build gets it in a file of its own, the reason on the
first line, so it can log those lines at ERROR apart from what the project's code printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from langgraph.checkpoint.memory import InMemorySaver

from agentruntime.services import StoreConfigError, load_graph
from deployments.serving.custom_routes import load_custom_app
from deployments.serving.process import configure_project_store, project_graph_specs
from deployments.serving.user_errors import user_error


class Command(BaseCommand):
    help = "Import and compile each graph listed in a langgraph.json, and its http.app; exit 1 if any fails."
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--config", required=True, help="Path to langgraph.json.")
        parser.add_argument("--report", help="Write a failure's reason, then its traceback, to this file instead of "
                                             "stderr.")

    def handle(self, *args, config, report=None, **options):
        self.project = Path(config).resolve().parent
        self.report = Path(report) if report else None
        graphs = {}
        checkpointer = InMemorySaver()
        for name, spec in project_graph_specs(config).items():
            try:
                graphs[name] = load_graph(spec, checkpointer=checkpointer)
            except Exception as exc:
                self._fail(f"Graph {name!r} failed to load", exc)
        try:
            configure_project_store(config)  # the store's embedding function loads, or the build fails here
        except StoreConfigError as exc:
            self._report(str(exc))
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
        except Exception as exc:
            self._fail(f"http.app {spec!r} failed to load", exc)
        self.stdout.write(f"http.app: OK ({type(app).__name__} with {len(app.routes)} route(s))")

    def _fail(self, what: str, exc: Exception) -> NoReturn:
        error = user_error(exc, project=self.project)
        self._report(f"{what}: {error.reason}", error.traceback)

    def _report(self, reason: str, traceback: list[str] | None = None) -> NoReturn:
        if self.report is not None:
            # The build logs the report itself: no "CommandError: …" line to repeat it among the project's output.
            self.report.write_text("\n".join([reason, *(traceback or [])]) + "\n")
            raise SystemExit(1)
        if traceback:
            self.stderr.write("\n".join(traceback))
        raise CommandError(reason)

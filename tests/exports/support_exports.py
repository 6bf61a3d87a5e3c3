"""Helpers for bulk export tests: seeded projects, destinations, a worker drained in-process, a faulty S3 proxy.

The files an export writes are read back with tests/exports/support_files.py."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db import connections
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from core.worker import Worker
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport
from tests.exports.support_destinations import destination_body
from tracing.models import Run, TracingProject

DAY1 = datetime(2026, 3, 1, tzinfo=UTC)
RUN_TYPES = ["llm", "chain", "tool"]
EXPORTS_URL = "/api/v1/bulk-exports"
DESTINATIONS_URL = "/api/v1/bulk-exports/destinations"


def seed_trace_runs(workspace, project: TracingProject, *, days: int = 3, per_day: int = 10, start: datetime = DAY1,
              minutes_apart: int = 7) -> list[Run]:
    """`per_day` runs on each of `days` UTC days: alternately root/child, run types cycling, two tags."""
    runs = []
    for day in range(days):
        for index in range(per_day):
            run_id = uuid.uuid4()
            started = start + timedelta(days=day, minutes=minutes_apart * index, microseconds=index)
            n = day * per_day + index
            runs.append(Run(
                id=run_id, workspace=workspace, session=project, trace_id=run_id, name=f"step-{n}",
                run_type=RUN_TYPES[n % 3], start_time=started, end_time=started + timedelta(seconds=2),
                status="success", is_root=n % 2 == 0, dotted_order=started.strftime("%Y%m%dT%H%M%S%fZ") + str(run_id),
                inputs={"question": f"q{n}", "n": n}, outputs={"answer": "ok " * 5}, extra={"metadata": {"n": n}},
                tags=["export", f"t{n % 2}"], total_tokens=n, prompt_tokens=n, completion_tokens=0,
                total_cost=Decimal("0.25") * n, prompt_cost=Decimal("0.25") * n, completion_cost=Decimal(0),
            ))
    Run.objects.bulk_create(runs)
    return sorted(runs, key=lambda run: (run.start_time, run.id))


def create_destination(client, s3, credentials, **config) -> dict:
    endpoint = config.pop("endpoint_url", s3.endpoint)
    response = client.post(DESTINATIONS_URL, destination_body(endpoint, credentials, **config), format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def export_body(destination: dict, project: TracingProject, *, days: int = 3, **extra) -> dict:
    body = {"bulk_export_destination_id": destination["id"], "session_id": str(project.id),
            "start_time": DAY1.isoformat(), "end_time": (DAY1 + timedelta(days=days)).isoformat()}
    body.update(extra)
    return body


def create_export(client, destination: dict, project: TracingProject, **extra) -> dict:
    response = client.post(EXPORTS_URL, export_body(destination, project, **extra), format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def unfinished_export(workspace, destination_id, *, days: int = 1) -> BulkExport:
    """A one-off export over an empty project, its export runs waiting: its destination is in use."""
    project = TracingProject.objects.create(workspace=workspace, name=f"in use {uuid.uuid4().hex[:8]}")
    return export_services.export_create(workspace=workspace, destination_id=destination_id, session_id=project.id,
                                         start_time=DAY1, end_time=DAY1 + timedelta(days=days))


def drain(max_rounds: int = 50) -> None:
    """Dispatch waiting export runs and run their jobs in this process until nothing is due."""
    worker = Worker(queues=["exports"], run_periodic=False, lease_seconds=600)
    for _ in range(max_rounds):
        export_services.export_runs_dispatch()
        if not worker.run_once():
            return


def export_runs_of(client, export_id: str) -> list[dict]:
    response = client.get(f"{EXPORTS_URL}/{export_id}/runs")
    assert response.status_code == 200
    return response.json()


class Background:
    """Runs `action` once `condition` holds (polled), on a thread with its own database connection."""

    def __init__(self, condition, action, timeout: float = 60):
        self.condition, self.action, self.timeout = condition, action, timeout
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        deadline = time.monotonic() + self.timeout
        try:
            while time.monotonic() < deadline:
                if self.condition():
                    self.action()
                    self.done.set()
                    return
                time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001 - reported by join()
            self.error = exc
        finally:
            connections.close_all()

    def join(self) -> bool:
        self.thread.join(self.timeout)
        if self.error is not None:
            raise self.error
        return self.done.is_set()


# --- an S3 server that records requests and can inject faults ---------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    query: str
    access_key_id: str | None
    answered: bool = False  # moto has finished handling it (a completed upload is in the bucket)

    @property
    def completes_upload(self) -> bool:
        return self.method == "POST" and "uploadId=" in self.query

    @property
    def completed_upload(self) -> bool:
        return self.completes_upload and self.answered


@dataclass
class Fault:
    matches: Callable[[Seen], bool]
    times: float
    status: int = 503
    code: str = "SlowDown"


class S3Proxy:
    """moto's S3 app on its own port (sharing the `s3` fixture's state), recording each request and
    answering with an S3 error instead while a registered fault matches."""

    def __init__(self):
        self.app = DomainDispatcherApplication(create_backend_app)
        self.seen: list[Seen] = []
        self.faults: list[Fault] = []
        self.injected = 0
        self.server = make_server("127.0.0.1", 0, self, True, request_handler=MotoRequestHandler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def __call__(self, environ, start_response):
        auth = environ.get("HTTP_AUTHORIZATION", "")
        key_id = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else None
        seen = Seen(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""), key_id)
        self.seen.append(seen)
        for fault in self.faults:
            if fault.times > 0 and fault.matches(seen):
                fault.times -= 1
                self.injected += 1
                length = int(environ.get("CONTENT_LENGTH") or 0)
                if length:
                    environ["wsgi.input"].read(length)
                body = f"<Error><Code>{fault.code}</Code><Message>injected</Message></Error>".encode()
                start_response(f"{fault.status} Injected", [("Content-Type", "application/xml"),
                                                            ("Content-Length", str(len(body)))])
                return [body]
        answer = self.app(environ, start_response)
        seen.answered = True
        return answer

    def fail(self, matches: Callable[[Seen], bool], *, times: float = 1, status: int = 503,
             code: str = "SlowDown") -> Fault:
        fault = Fault(matches, times, status, code)
        self.faults.append(fault)
        return fault

    def reset(self) -> None:
        self.seen.clear()
        self.faults.clear()
        self.injected = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()


"""Fixtures for destination tests: loopback egress, a `*.localhost` resolver, a recording S3 server,
socket accounting and small hostile HTTP servers."""

from __future__ import annotations

import http.server
import socket
import threading
from dataclasses import dataclass

import pytest
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from core import egress
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS, localhost_resolver
from tests.exports.support_exports import create_destination
from tests.support_processes import server_fixture
from tests.support_s3 import allow
from tracing.models import TracingProject

# Connections the test infrastructure itself may open (PostgreSQL, Redis) are not the code under test.
INFRASTRUCTURE_PORTS = {5432, 6379}


@pytest.fixture(autouse=True)
def no_idle_s3_connections():
    """The S3 clients' shared idle connections outlive each client: no test inherits another's."""
    from exports import s3_clients

    s3_clients.close_idle_connections()
    yield
    s3_clients.close_idle_connections()


@pytest.fixture
def egress_loopback(settings):
    """The operator allowlisted loopback, where the test S3 servers live."""
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    return settings


@pytest.fixture
def localhost_dns():
    with egress.use_resolver(localhost_resolver):
        yield


@pytest.fixture
def bucket(s3):
    return s3.create_bucket(BUCKET)


@pytest.fixture
def writer(s3, bucket):
    """Credentials allowed to put, get and delete objects in the bucket."""
    return s3.create_user("writer", [allow(WRITE_ACTIONS, bucket)])


@pytest.fixture
def project(request, workspace):
    """A tracing project of the owner's workspace, named after the test module ("export_api" for test_export_api)."""
    return TracingProject.objects.create(workspace=workspace, name=request.module.__name__.rsplit(".test_", 1)[-1])


@pytest.fixture
def destination(api_client, s3, writer):
    """A destination made through the API on the loopback S3 server, with the writer's credentials (as answered)."""
    return create_destination(api_client, s3, writer)


# --- recording S3 server ---------------------------------------------------------------------------


@dataclass
class SeenRequest:
    method: str
    host: str
    path: str
    query: str
    access_key_id: str | None


class _Recorder:
    def __init__(self, app):
        self.app = app
        self.requests: list[SeenRequest] = []

    def __call__(self, environ, start_response):
        auth = environ.get("HTTP_AUTHORIZATION", "")
        key_id = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else None
        self.requests.append(SeenRequest(environ["REQUEST_METHOD"], environ.get("HTTP_HOST", ""),
                                         environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""), key_id))
        return self.app(environ, start_response)


class RecordingS3Server:
    """A second moto server in this process (so it shares the `s3` fixture's state) that records
    every request it receives: method, Host header, path and the signing access key id."""

    def __init__(self):
        self.recorder = _Recorder(DomainDispatcherApplication(create_backend_app))
        self.server = make_server("127.0.0.1", 0, self.recorder, True, request_handler=MotoRequestHandler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self) -> list[SeenRequest]:
        return list(self.recorder.requests)

    def clear(self) -> None:
        self.recorder.requests.clear()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()


recording_server = server_fixture(RecordingS3Server)


@pytest.fixture
def recording_s3(s3, recording_server):
    recording_server.clear()
    return recording_server


# --- socket accounting -----------------------------------------------------------------------------


@pytest.fixture
def connections(monkeypatch):
    """Every TCP connect this process attempts, as (address, port); infrastructure ports excluded."""
    attempts: list[tuple[str, int]] = []
    original = socket.socket.connect

    def connect(sock, address):
        if isinstance(address, tuple) and address[1] not in INFRASTRUCTURE_PORTS:
            attempts.append((address[0], address[1]))
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


# --- small hostile HTTP servers ----------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviour = "html"
    canary = ""

    def log_message(self, *args):
        pass

    def _reply(self, status: int, body: bytes, headers: dict | None = None):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append((self.command, self.path))
        kind = self.server.behaviour
        if kind == "html":
            self._reply(200 if self.command in ("GET", "HEAD") else 501,
                        f"<html><body>Not S3 {self.server.canary}</body></html>".encode(),
                        {"Content-Type": "text/html"})
        elif kind == "redirect":
            self._reply(301, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
        elif kind == "redirect307":
            self._reply(307, b"", {"Location": "http://169.254.169.254/latest/meta-data/"})
        elif kind.startswith("s3error:"):
            code = kind.split(":", 1)[1]
            body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                    f"<Message>{self.server.canary}</Message><RequestId>1</RequestId></Error>").encode()
            self._reply(400 if code != "AccessDenied" else 403, body, {"Content-Type": "application/xml"})
        elif kind == "flaky":
            # SlowDown twice, then behave like S3 for the small test file.
            if self.command == "PUT" and sum(1 for m, _ in self.server.seen if m == "PUT") <= 2:
                body = b"<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
                self._reply(503, body, {"Content-Type": "application/xml"})
            else:
                self._like_s3(length)
        elif kind == "s3":
            # Like S3 for the small test file, keeping connections alive (moto's server closes each one).
            self._like_s3(length)
        elif kind == "huge":
            self.send_response(500)
            self.send_header("Content-Length", str(64 * 1024 * 1024))
            self.end_headers()
            try:
                chunk = b"<" * 65536
                for _ in range(1024):
                    self.wfile.write(chunk)
            except OSError:
                pass

    def _like_s3(self, length: int):
        if self.command == "HEAD":
            self.send_response(200)
            self.send_header("ETag", '"abc"')
            self.send_header("Content-Length", str(self.server.put_size))
            self.end_headers()
        else:
            self.server.put_size = self.server.put_size or length
            self._reply(204 if self.command == "DELETE" else 200, b"", {"ETag": '"abc"'})

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _any


class FakeHttpServer:
    def __init__(self, behaviour: str, canary: str = ""):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.behaviour = behaviour
        self.server.canary = canary
        self.server.seen = []
        self.server.put_size = 0
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def seen(self) -> list:
        return self.server.seen

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_http():
    started = []

    def start(behaviour: str, canary: str = "") -> FakeHttpServer:
        server = FakeHttpServer(behaviour, canary)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()

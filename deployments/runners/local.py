"""The local-process runner: builds in per-revision virtual environments, serves with child processes.

It executes tenant code on the service's host, as the service's user. It is meant for
single-tenant and trusted installs, and is disabled unless DEPLOY_LOCAL_RUNNER_ENABLED is on
(the default only with DEBUG). Revision processes are children of the worker that started them
and die with it; the reconciler (a periodic job) starts the active ones again.
"""

from __future__ import annotations

import logging
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.conf import settings
from django.db import connections

from core.exceptions import BadRequest
from core.processes import pid_alive
from deployments import build, databases, environment, langgraph_config, sources
from deployments.models import Deployment, Revision, RevisionLog
from deployments.processes import LineSink, StepStopped, popen, stop_group
from deployments.runners.base import RevisionRecords, StepContext, StepFailed, Upstream

log = logging.getLogger("deployments.runner")

# A request the proxy sent on its way just before the switch may not have reached the old process yet: a replaced
# revision is stopped no sooner than this after the switch, even when it counts no request in flight.
DRAIN_SETTLE_SECONDS = 2.0
IMAGE_SOURCES = (Deployment.Source.EXTERNAL_DOCKER, Deployment.Source.INTERNAL_DOCKER)
SUPPORTED_SOURCES = (Deployment.Source.INTERNAL_SOURCE, Deployment.Source.GITHUB)


class RevisionDirs:
    """A revision's directories under `root`: its source, its virtualenv, the server's HOME and its data."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.src, self.venv, self.home, self.data = (root / name for name in ("src", "venv", "home", "data"))
        self.python = self.venv / "bin" / "python"


@dataclass
class Child:
    revision_id: str
    process: subprocess.Popen
    pump: threading.Thread


def _required(value: str | None, field: str) -> str:
    """A revision field its source needs: deployments.services sets it when it creates the revision."""
    if not value:
        raise StepFailed(f"The revision has no {field}; redeploy it.")
    return value


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalProcessRunner:
    name = "local"

    def __init__(self, records: RevisionRecords):
        self.records = records
        self._children: dict[str, Child] = {}
        self._lock = threading.Lock()

    # --- creation-time checks --------------------------------------------------------------------------------
    def require(self, source: str) -> None:
        if not settings.DEPLOY_LOCAL_RUNNER_ENABLED:
            raise BadRequest("Deployments are disabled: the local runner (DEPLOY_LOCAL_RUNNER_ENABLED) is off. It runs "
                             "tenant code on this host and is meant only for trusted, single-tenant installs.")
        if source in IMAGE_SOURCES:
            raise BadRequest(f"The local runner cannot deploy '{source}' sources: images need a container runtime, "
                             "which the local runner does not have. Use internal_source or github, or a Kubernetes "
                             "runner (docs/kubernetes-runner.md).")
        if source not in SUPPORTED_SOURCES:
            raise BadRequest(f"The local runner cannot deploy '{source}' sources; use internal_source or github.")

    # --- build -----------------------------------------------------------------------------------------------
    def dirs(self, revision: Revision) -> RevisionDirs:
        return RevisionDirs(Path(settings.DEPLOY_ROOT) / "revisions" / str(revision.id))

    def fetch_source(self, ctx: StepContext) -> None:
        revision, dirs = ctx.revision, self.dirs(ctx.revision)
        shutil.rmtree(dirs.root, ignore_errors=True)
        dirs.home.mkdir(parents=True)
        dirs.data.mkdir(parents=True)
        try:
            if revision.source == Deployment.Source.GITHUB:
                ctx.log(f"Fetching {revision.repo_ref or 'HEAD'} of {revision.repo_url}")
                sha = sources.git_fetch(url=_required(revision.repo_url, "repo_url"), ref=revision.repo_ref,
                                        dest=dirs.src, home=dirs.home, sink=ctx.sink, should_stop=ctx.should_stop)
                self.records.commit_set(revision=revision, sha=sha)
                ctx.log(f"Checked out commit {sha}")
            else:
                tarball = _required(revision.source_tarball_path, "source_tarball_path")
                sources.extract_upload(object_path=tarball, dest=dirs.src)
                ctx.log("Unpacked the uploaded source.")
        except (sources.SourceError, BadRequest) as exc:
            raise StepFailed(str(exc)) from None

    def build(self, ctx: StepContext) -> None:
        revision, dirs = ctx.revision, self.dirs(ctx.revision)
        try:
            config = langgraph_config.load(
                source_root=dirs.src, config_path=_required(revision.langgraph_config_path, "langgraph_config_path"))
        except langgraph_config.ConfigError as exc:
            raise StepFailed(f"Invalid {revision.langgraph_config_path}: {exc}") from None
        for warning in config.warnings:
            ctx.log(warning, "WARNING")
        ctx.log(f"Graphs: {', '.join(f'{k} ({v})' for k, v in config.graphs.items())}")
        if config.http.get("app"):
            ctx.log("Custom routes: the project's own app (http.app) is served beside the Agent Server API.")
        arguments, on_path = build.pip_targets(config)
        python = build.create_venv(dirs.venv, extra_paths=on_path)
        ctx.log(f"Created the environment {dirs.venv.name} (Python {sys.version_info.major}.{sys.version_info.minor}).")
        try:
            pins = build.service_constraints()
            build.check_pins(build.requirement_lines(config), pins)
            if arguments:
                constraints = dirs.root / "constraints.txt"
                build.write_constraints(constraints, pins)
                build.pip_install(python=python, arguments=arguments, constraints=constraints,
                                  env=environment.pip_env(home=dirs.home), cwd=config.directory, sink=ctx.sink,
                                  should_stop=ctx.should_stop)
            else:
                ctx.log("No dependencies to install beyond the service's own packages.")
            env = environment.serving_env(revision=revision, home=dirs.home, data_dir=dirs.data,
                                          venv_bin=python.parent, http=config.http)
            build.check_graphs(python=python, config=config, env=env, sink=ctx.sink, should_stop=ctx.should_stop)
        except build.BuildFailed as exc:
            raise StepFailed(str(exc)) from None

    # --- serving ---------------------------------------------------------------------------------------------
    def start(self, ctx: StepContext) -> None:
        revision, dirs = ctx.revision, self.dirs(ctx.revision)
        self.stop(revision)
        relative_config = _required(revision.langgraph_config_path, "langgraph_config_path")
        config_path = (dirs.src / relative_config).resolve()
        if not dirs.python.exists() or not config_path.is_file():
            raise StepFailed("The build output of this revision is missing; redeploy it to build it again.")
        try:
            http = langgraph_config.load(source_root=dirs.src, config_path=relative_config).http
        except langgraph_config.ConfigError as exc:
            raise StepFailed(f"Invalid {revision.langgraph_config_path}: {exc}") from None
        database = _recorded_database(revision)
        port, token = _free_port(), secrets.token_urlsafe(32)
        env = environment.serving_env(revision=revision, home=dirs.home, data_dir=dirs.data,
                                      venv_bin=dirs.python.parent, port=port, token=token, http=http,
                                      database=databases.connection_env(database))
        command = [str(dirs.python), str(Path(settings.BASE_DIR) / "manage.py"), "serve_graphs",
                   "--config", str(config_path), "--port", str(port)]
        process = popen(command, env=env, cwd=config_path.parent)
        sink = self.records.log_sink(revision_id=revision.id, type=RevisionLog.Type.DEPLOY)
        pump = threading.Thread(target=self._pump, args=(process, sink), name=f"serve-{revision.id}", daemon=True)
        pump.start()
        with self._lock:
            self._children[str(revision.id)] = Child(str(revision.id), process, pump)
        self.records.serving_set(revision=revision, host=socket.gethostname(), port=port, pid=process.pid,
                                 token=token)
        ctx.log(f"Started the server (pid {process.pid}) on 127.0.0.1:{port}.")

    def _pump(self, process, sink: LineSink) -> None:
        """Copy the server's output into the deploy log until it exits, then reap it."""
        fd, buffer, last_flush = process.stdout.fileno(), b"", time.monotonic()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                while True:
                    if selector.select(timeout=0.5):
                        chunk = os.read(fd, 65536)
                        if not chunk:
                            break
                        *lines, buffer = (buffer + chunk).split(b"\n")
                        for line in lines:
                            sink.write(line.decode("utf-8", errors="replace"))
                    if time.monotonic() - last_flush > 0.5:
                        sink.flush()
                        last_flush = time.monotonic()
            if buffer:
                sink.write(buffer.decode("utf-8", errors="replace"))
            code = process.wait()
            sink.write(f"The server process exited with code {code}.", "WARNING" if code else "INFO")
            sink.flush()
        except Exception:
            log.exception("log pump of pid %s failed", process.pid)
        finally:
            process.stdout.close()
            connections.close_all()

    def _child(self, revision: Revision) -> Child | None:
        with self._lock:
            return self._children.get(str(revision.id))

    def wait_healthy(self, ctx: StepContext) -> None:
        revision = ctx.revision
        child = self._child(revision)
        deadline = time.monotonic() + settings.DEPLOY_HEALTH_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if child and child.process.poll() is not None:
                child.pump.join(timeout=5)
                raise StepFailed(f"The server exited with code {child.process.returncode} before it became "
                                 "healthy: see the deploy log.")
            if self.is_healthy(revision):
                ctx.log("Health check passed: GET /ok answered.")
                return
            reason = ctx.should_stop()
            if reason:
                raise StepStopped(reason)
            time.sleep(0.3)
        raise StepFailed(f"The server did not pass its health check (GET /ok) within "
                         f"{settings.DEPLOY_HEALTH_TIMEOUT_SECONDS} seconds.")

    def is_healthy(self, revision: Revision) -> bool:
        if not revision.serving_port:
            return False
        try:
            with httpx.Client(trust_env=False, timeout=2) as client:
                response = client.get(f"http://127.0.0.1:{revision.serving_port}/ok")
            return response.status_code == 200 and response.json().get("revision_id") == str(revision.id)
        except (httpx.HTTPError, ValueError, AttributeError):
            return False

    def is_running(self, revision: Revision) -> bool:
        child = self._child(revision)
        if child is not None:
            return child.process.poll() is None
        if not revision.serving_pid:
            return False
        return _is_revision_process(revision.serving_pid, revision.id)

    def stop(self, revision: Revision) -> None:
        with self._lock:
            child = self._children.pop(str(revision.id), None)
        if child is not None:
            stop_group(child.process)
            child.pump.join(timeout=5)
        elif revision.serving_pid and _is_revision_process(revision.serving_pid, revision.id):
            _stop_foreign(revision.serving_pid)
        if revision.serving_pid or revision.serving_port:
            self.records.serving_set(revision=revision)

    def stop_strays(self, keep: set) -> None:
        with self._lock:
            strays = [rid for rid in self._children if rid not in {str(k) for k in keep}]
        for revision_id in strays:
            revision = Revision.objects.filter(id=revision_id).first()
            if revision is not None:
                self.stop(revision)
            else:
                with self._lock:
                    child = self._children.pop(revision_id, None)
                if child:
                    stop_group(child.process)

    def drain(self, revision: Revision, *, timeout: float) -> int:
        """Wait until the revision's server has no request in flight (open streams included) or `timeout` passes;
        the requests still open then (the proxy sends it none meanwhile: another revision is active)."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            in_flight = self._in_flight(revision)
            settled = time.monotonic() - started >= DRAIN_SETTLE_SECONDS
            if (not in_flight and settled) or time.monotonic() >= deadline:
                return in_flight
            time.sleep(0.2)

    def _in_flight(self, revision: Revision) -> int:
        if not revision.serving_port:
            return 0
        try:
            with httpx.Client(trust_env=False, timeout=2) as client:
                body = client.get(f"http://127.0.0.1:{revision.serving_port}/ok").json()
            return int(body.get("in_flight", 0)) if body.get("revision_id") == str(revision.id) else 0
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            return 0

    def discard(self, revision: Revision) -> None:
        shutil.rmtree(self.dirs(revision).root, ignore_errors=True)

    def legacy_database(self, revision: Revision) -> Path | None:
        """The SQLite file an older version of this service gave the revision's own process, if it is still there."""
        path = self.dirs(revision).data / "db.sqlite3"
        return path if path.is_file() else None

    def upstream(self, revision: Revision) -> Upstream | None:
        if not revision.serving_port or not revision.serving_token:
            return None
        return Upstream(f"http://127.0.0.1:{revision.serving_port}", {"X-Serving-Token": revision.serving_token})


def _recorded_database(revision: Revision) -> databases.DeploymentDatabase:
    deployment = revision.deployment
    database = databases.recorded(name=deployment.database_name, role=deployment.database_role,
                                  password=deployment.database_password)
    if database is None:
        raise StepFailed("The deployment has no database yet; redeploy it to create one.")
    return database


def _is_revision_process(pid: int, revision_id) -> bool:
    """True when `pid` is a live serving process of this revision (pids are reused, so check its environment)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"SERVE_GRAPHS_REVISION_ID={revision_id}".encode() in environ.split(b"\0")


def _stop_foreign(pid: int) -> None:
    """Stop a serving process that another worker started (it is a session leader: its group id is its pid)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return
            time.sleep(0.1)



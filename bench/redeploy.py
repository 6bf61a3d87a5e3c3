"""Redeploy under load: how long from the PATCH to the new revision serving, and how many calls fail meanwhile.

Starts the service as a test's live stack does (Daphne serving config.asgi plus one `run_worker`, the local runner on,
pip offline) on a database of its own (PostgreSQL `bench_redeploy`, dropped and created anew, or `--sqlite`),
deploys tests/agentserver/project through `/v2/deployments` (a tarball upload, as `langgraph deploy` does), then:

* K clients (`--clients`) call `runs.wait(None, "echo")` in a loop through the deployment's URL (the service's proxy)
  with the official `langgraph_sdk` async client, each answer checked;
* `--stream-clients` more call `runs.stream(None, "echo", stream_mode="values")` in a loop, the last values checked;
* after `--before` seconds, a new revision is uploaded and PATCHed. Each revision's `echo` also answers
  `"revision": "rN"`, so the clients see which revision served each call;
* the script reports the time from the PATCH to the revision's `DEPLOYED` status, to the first call answered by the
  new revision and to the last answered by the old one, and every failed call (an exception, a wrong answer) from
  the PATCH until `--after` seconds after the new revision first answered. `--redeploys N` repeats the PATCH.

    .venv/bin/python bench/redeploy.py [--clients 4] [--stream-clients 2] [--redeploys 2] [--sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from bench_support import (  # noqa: E402 - a sibling module
    free_port,
    production_env,
    recreate_database,
    stop_process_group,
    wait_http,
)

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "agentserver" / "project"
FAILED = ("BUILD_FAILED", "DEPLOY_FAILED", "CREATE_FAILED")


# --- The service ---------------------------------------------------------------------------------------------------
@dataclass
class Service:
    url: str
    key: str
    processes: list[subprocess.Popen] = field(default_factory=list)

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process_group(process)


def service_env(args, work: Path) -> dict[str, str]:
    env = {**os.environ, **production_env(), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1",
           "SECURE_SSL_REDIRECT": "false", "DATA_DIR": str(work / "data"), "DEPLOY_ROOT": str(work / "deploy-root"),
           "DEPLOY_LOCAL_RUNNER_ENABLED": "true", "DEPLOY_PIP_ARGS": "--no-index", "WORKER_POLL_SECONDS": "0.2",
           "DEPLOY_RECONCILE_SECONDS": "2", "DEPLOY_HEALTH_TIMEOUT_SECONDS": "120", "NO_PROXY": "127.0.0.1,localhost",
           "LANGSMITH_TRACING": "false"}
    for name in ("TEST_DB_SUFFIX", "DATABASE_URL", "SQLITE_PATH", "REDIS_URL", "LANGSMITH_API_KEY"):
        env.pop(name, None)
    if args.sqlite:
        env["SQLITE_PATH"] = str(work / "data" / "db.sqlite3")
    else:
        recreate_database(args.database_url)
        env["DATABASE_URL"] = args.database_url
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    return env


def start_service(args, work: Path, service: Service) -> None:
    """migrate, an API key, Daphne and one worker (appended to `service.processes` as they start)."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    env = service_env(args, work)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], cwd=ROOT, env=env, check=True)
    created = subprocess.run([*manage, "create_api_key", "--workspace", "bench"], cwd=ROOT, env=env, check=True,
                             capture_output=True, text=True)
    service.key = json.loads(created.stdout.strip().splitlines()[-1])["api_key"]
    port = free_port()
    service.url = env["PUBLIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    for name, command in (("server", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                      "config.asgi:application"]),
                          ("worker", [*manage, "run_worker"])):
        with open(work / f"{name}.log", "wb") as out:
            service.processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                                      stderr=subprocess.STDOUT, start_new_session=True))
        if name == "server":
            wait_http(f"{service.url}/healthz", service.processes[-1], work / "server.log")


def revision_project(work: Path, number: int) -> Path:
    """tests/agentserver/project whose `echo` also answers which revision it is ("rN")."""
    project = work / f"project-r{number}"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    graphs = project / "graphs.py"
    text = graphs.read_text()
    text = text.replace("    echo: str\n", "    echo: str\n    revision: str\n", 1)
    text = text.replace('    return {"echo": text}\n', f'    return {{"echo": text, "revision": "r{number}"}}\n', 1)
    if f'"r{number}"' not in text:
        raise SystemExit("tests/agentserver/project/graphs.py changed: update revision_project()")
    graphs.write_text(text)
    return project


def tarball(root: Path) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(root)))
    return buffer.getvalue()


# --- The control plane, as a CI script calls it -------------------------------------------------------------------
class ControlPlane:
    def __init__(self, service: Service):
        self.http = httpx.AsyncClient(base_url=service.url, headers={"X-Api-Key": service.key}, timeout=60,
                                      trust_env=False)

    async def call(self, method: str, path: str, **kwargs) -> dict:
        response = await self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise SystemExit(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else {}

    async def upload(self, deployment_id: str, project: Path) -> str:
        target = await self.call("POST", f"/v2/deployments/{deployment_id}/upload-url",
                                 json={"supports_upload_headers": True})
        async with httpx.AsyncClient(trust_env=False, timeout=60) as plain:  # the signed URL authorises the PUT
            put = await plain.put(target["upload_url"], content=tarball(project),
                                  headers={"Content-Type": "application/gzip"})
        if put.status_code != 200:
            raise SystemExit(f"upload: {put.status_code} {put.text[:500]}")
        return target["object_path"]

    async def patch(self, deployment_id: str, object_path: str) -> str:
        body = {"revision_source": "internal_source", "source_revision_config": {
            "source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"}}
        return (await self.call("PATCH", f"/v2/deployments/{deployment_id}", json=body))["latest_revision_id"]

    async def wait_deployed(self, deployment_id: str, revision_id: str, timeout: float = 300) -> float:
        """Poll the revision every 0.1 s; the monotonic time it was first seen DEPLOYED."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = (await self.call("GET", f"/v2/deployments/{deployment_id}/revisions/{revision_id}"))["status"]
            if status == "DEPLOYED":
                return time.monotonic()
            if status in FAILED:
                raise SystemExit(f"revision {revision_id}: {status}")
            await asyncio.sleep(0.1)
        raise SystemExit(f"revision {revision_id} not DEPLOYED in {timeout}s")


# --- Clients -------------------------------------------------------------------------------------------------------
@dataclass
class Call:
    started: float
    ended: float
    revision: str | None
    error: str | None


def message(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "human", "content": text}]}


async def wait_values(client, text: str) -> dict:
    """One `runs.wait` call: the run's final values."""
    result = await client.runs.wait(None, "echo", input=message(text))
    return result if isinstance(result, dict) else {"unexpected": result}


async def stream_values(client, text: str) -> dict:
    """One `runs.stream` call: the last values part (an error event fails the call)."""
    last: dict = {}
    async for part in client.runs.stream(None, "echo", stream_mode="values", input=message(text)):
        if part.event == "error":
            raise RuntimeError(f"error event: {str(part.data)[:200]}")
        if part.event == "values" and isinstance(part.data, dict):
            last = part.data
    return last


async def caller(url: str, key: str, calls: list[Call], stop: asyncio.Event, name: str, call) -> None:
    """Call `call(client, text)` in a loop until `stop`, recording each call: its revision, or why it failed."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=key, timeout=(10, 60, 60, 60))  # connect, read, write, pool
    i = 0
    try:
        while not stop.is_set():
            text, i = f"{name} call {i}", i + 1
            began = time.monotonic()
            try:
                values = await call(client, text)
                ok = values.get("echo") == text
                calls.append(Call(began, time.monotonic(), values.get("revision") if ok else None,
                                  None if ok else f"{name}: wrong answer: {str(values)[:200]}"))
            except Exception as exc:  # a failed call: counted and shown
                calls.append(Call(began, time.monotonic(), None, f"{name}: {type(exc).__name__}: {exc}"[:300]))
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()


# --- Driver --------------------------------------------------------------------------------------------------------
def summary(calls: list[Call], since: float, until: float) -> dict:
    window = [c for c in calls if c.ended >= since and c.started <= until]
    failed = [c for c in window if c.error]
    latencies = sorted(c.ended - c.started for c in window if not c.error)
    return {"calls": len(window), "failed": len(failed), "errors": sorted({re.sub(r"[0-9a-f-]{36}", "…", c.error)
                                                                          for c in failed if c.error})[:5],
            "p50_ms": statistics.median(latencies) * 1e3 if latencies else None,
            "max_ms": latencies[-1] * 1e3 if latencies else None}


async def redeploy_once(plane: ControlPlane, deployment_id: str, work: Path, number: int, calls: list[Call],
                        after: float) -> dict:
    object_path = await plane.upload(deployment_id, revision_project(work, number))
    old = f"r{number - 1}"
    new = f"r{number}"
    patched = time.monotonic()
    revision_id = await plane.patch(deployment_id, object_path)
    deployed = await plane.wait_deployed(deployment_id, revision_id)
    deadline = time.monotonic() + 300
    while not any(c.revision == new for c in calls if c.started >= patched):
        if time.monotonic() > deadline:
            raise SystemExit(f"{new} never answered")
        await asyncio.sleep(0.05)
    first_new = min(c.ended for c in calls if c.revision == new)
    await asyncio.sleep(after)
    last_old = max((c.ended for c in calls if c.revision == old), default=patched)
    window = summary(calls, patched, time.monotonic())
    return {"revision": new, "patch_to_deployed_s": deployed - patched, "patch_to_first_new_s": first_new - patched,
            "patch_to_last_old_s": last_old - patched, **window, "load": os.getloadavg()[0]}


async def drive(args, service: Service, work: Path) -> None:
    plane = ControlPlane(service)
    began = time.monotonic()
    deployment = await plane.call("POST", "/v2/deployments", json={
        "name": "bench-redeploy", "source": "internal_source", "source_revision_config": {},
        "source_config": {"deployment_type": "dev"}, "secrets": []})
    deployment_id = deployment["id"]
    args.deployment_id = deployment_id
    first = await plane.patch(deployment_id, await plane.upload(deployment_id, revision_project(work, 1)))
    await plane.wait_deployed(deployment_id, first)
    url = (await plane.call("GET", f"/v2/deployments/{deployment_id}"))["source_config"]["custom_url"]
    print(f"# first revision DEPLOYED {time.monotonic() - began:.1f} s after the POST; serving at {url}", flush=True)
    calls: list[Call] = []
    stop = asyncio.Event()
    clients = [asyncio.create_task(caller(url, service.key, calls, stop, f"c{n}", wait_values))
               for n in range(args.clients)]
    clients += [asyncio.create_task(caller(url, service.key, calls, stop, f"s{n}", stream_values))
                for n in range(args.stream_clients)]
    try:
        await asyncio.sleep(args.before)
        steady = summary(calls, began, time.monotonic())
        print(f"# steady before the first PATCH: {steady['calls']} calls, {steady['failed']} failed, "
              f"p50 {steady['p50_ms'] or 0:.0f} ms", flush=True)
        for number in range(2, 2 + args.redeploys):
            result = await redeploy_once(plane, deployment_id, work, number, calls, args.after)
            print(json.dumps(result), flush=True)
            print(f"  {result['revision']}: PATCH → DEPLOYED {result['patch_to_deployed_s']:.1f} s, → first answer "
                  f"from it {result['patch_to_first_new_s']:.1f} s, → last answer from the old one "
                  f"{result['patch_to_last_old_s']:.1f} s; {result['failed']} failed of {result['calls']} calls "
                  f"from the PATCH to {args.after:.0f} s after (p50 {result['p50_ms'] or 0:.0f} ms, max "
                  f"{result['max_ms'] or 0:.0f} ms), load {result['load']:.1f}"
                  + (f"; errors: {result['errors']}" if result["errors"] else ""), flush=True)
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        total = summary(calls, began, time.monotonic())
        print(f"# all calls: {total['calls']}, failed {total['failed']}", flush=True)
        await plane.call("DELETE", f"/v2/deployments/{deployment_id}")
        await plane.http.aclose()


def stray_revision_processes(deployment_id: str) -> list[int]:
    """Serving processes of the bench's deployment still alive (found by the environment the runner gave them)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if f"SERVE_GRAPHS_DEPLOYMENT_ID={deployment_id}".encode() in environ.split(b"\0"):
            found.append(int(entry))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=4, help="runs.wait callers")
    parser.add_argument("--stream-clients", type=int, default=2, help="runs.stream callers")
    parser.add_argument("--redeploys", type=int, default=2)
    parser.add_argument("--before", type=float, default=5, help="seconds of load before the first PATCH")
    parser.add_argument("--after", type=float, default=5, help="seconds of load after the new revision answers")
    parser.add_argument("--sqlite", action="store_true", help="the service on SQLite instead of PostgreSQL")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_redeploy")
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--work", type=Path, default=ROOT / "data" / "bench" / "redeploy")
    args = parser.parse_args()
    args.deployment_id = None
    print(f"# `uptime` at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    service = Service(url="", key="")
    try:
        start_service(args, args.work, service)
        asyncio.run(drive(args, service, args.work))
    finally:
        if args.deployment_id:  # DELETE stops them through the worker; give it a moment
            deadline = time.monotonic() + 30
            while stray_revision_processes(args.deployment_id) and time.monotonic() < deadline:
                time.sleep(0.5)
        service.stop()
        for pid in stray_revision_processes(args.deployment_id) if args.deployment_id else ():
            print(f"# stopping the revision process {pid} the service left", flush=True)
            os.killpg(pid, 15)
        print(f"# `uptime` at end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()

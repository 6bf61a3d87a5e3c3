"""Playing one scripted scenario against an Agent Server and normalising what it answers, so that LangChain's own
(`langgraph dev`) and ours can be compared step by step (tests/agentserver/test_differential.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from tests.support_processes import BASE_DIR, free_port, wait_for_http

UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# UUIDs anywhere in a string (`child:<task id>`, `updates|child:<task id>`), and interrupt ids (xxh3 hashes of a
# task's namespace, so of its uuid).
ID_IN_TEXT = re.compile(rf"{UUID_TEXT}|^[0-9a-f]{{32}}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# Checkpoint metadata describing the Agent Server's own deployment and request, not the thread, and `thread_id`,
# which LangGraph's checkpointers leave out (EXCLUDED_METADATA_KEYS) and only the in-memory runtime keeps.
PEER_ONLY_METADATA = {"thread_id", "assistant_id", "user_id", "created_by", "run_attempt", "langgraph_version",
                      "langgraph_api_version", "langgraph_plan", "langgraph_host", "langgraph_api_url",
                      "langgraph_auth_user_id", "langgraph_request_id", "run_id"}
# Run metadata that names the deployment (versions, plan, host, URL) or the installed packages (`lc_versions`
# lists `langchain` when it is installed): wherever it appears, it says nothing about the run.
DEPLOYMENT_METADATA = {"langgraph_version", "langgraph_api_version", "langgraph_plan", "langgraph_host",
                       "langgraph_api_url", "langgraph_request_id", "lc_versions"}
HEADERS = ("location", "content-location")
PEER = BASE_DIR / "data" / "langgraph-peer" / "venv" / "bin" / "langgraph"
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}


@contextmanager
def peer_serving(project: Path, tmp_path: Path) -> Iterator[str]:
    """`langgraph dev` (installed by scripts/test-deps.d/40-langgraph-dev.sh) serving a copy of `project`, offline;
    yields its URL once it answers."""
    copy = shutil.copytree(project, tmp_path / "peer-project")
    port = free_port()
    log = open(tmp_path / "peer.log", "wb")
    # It polls for queued runs twice a second: several runs at once keep the stream scenario short.
    process = subprocess.Popen([str(PEER), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port",
                                str(port), "--n-jobs-per-worker", "8"], cwd=copy, env={**os.environ, **OFFLINE},
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/ok", process=process, timeout=90,
                      describe=lambda: (tmp_path / "peer.log").read_text(errors="replace")[-3000:])
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
        log.close()


def internal_configurable(key: str) -> bool:
    """The Agent Server's own entries in a run's configurable: request timing, `after_seconds`, the node counter,
    the authenticated user (`user_id` "" without auth)."""
    return key.startswith("__") or key.startswith("langgraph_auth_") or key == "user_id"


class Normaliser:
    """Ids become <id-N> in order of first appearance (keys visited sorted, so key order does not matter),
    timestamps <ts>, deployment metadata is dropped."""

    def __init__(self):
        self.ids: dict[str, str] = {}

    def __call__(self, value):
        if isinstance(value, dict) and "next" in value and isinstance(value.get("metadata"), dict):  # a ThreadState
            metadata = {k: v for k, v in value["metadata"].items() if k not in PEER_ONLY_METADATA}
            value = {**value, "metadata": metadata}
        if isinstance(value, dict) and isinstance(value.get("kwargs"), dict) and "run_id" in value:  # a Run
            config = value["kwargs"].get("config") or {}
            # The Agent Server adds `run_attempt` to the stored run's config when it starts it.
            metadata = {k: v for k, v in (config.get("metadata") or {}).items() if k != "run_attempt"}
            value = {**value, "kwargs": {**value["kwargs"], "config": {**config, "metadata": metadata}}}
        if isinstance(value, dict):
            return {self(k): self(v if k != "configurable" or not isinstance(v, dict) else
                                  {c: x for c, x in v.items() if not internal_configurable(c)})
                    for k, v in sorted(value.items()) if k not in DEPLOYMENT_METADATA}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str) and TIMESTAMP.match(value):
            return "<ts>"
        if isinstance(value, str):
            return ID_IN_TEXT.sub(lambda m: self.ids.setdefault(m.group(0), f"<id-{len(self.ids)}>"), value)
        return value


@dataclass
class Step:
    """One request. `path` and `body` may name earlier results as `{name}`: `save` keeps the answer's `run_id`
    (a cron's `cron_id`) under that name. `stream` reads the answer as SSE frames; `settle` waits (polling GET
    `settle`) until the run it names has ended, so that what follows does not depend on timing."""

    method: str
    path: str
    body: object = None
    save: str | None = None
    stream: bool = False
    raw: bytes | None = None
    settle: str | None = None


def fill(value, names: dict):
    if isinstance(value, str):
        return value.format(**names) if "{" in value else value
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    return value


def sse_frames(text: str) -> list[tuple[str, object]]:
    frames = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if event is not None:
            frames.append((event, orjson.loads("\n".join(data)) if data else None))
    return frames


def apart_from_events(frames: list[tuple[str, object]]) -> object:
    """With the `events` mode, the callback events and the other modes' frames, each in order. How the two
    interleave depends on the event loop (it differs from run to run on either server), not on the server."""
    if not any(event == "events" for event, _ in frames):
        return frames
    return {"events": [data for event, data in frames if event == "events"],
            "frames": [(event, data) for event, data in frames if event != "events"]}


def wait_until_ended(client: httpx.Client, path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.get(path).json().get("status") not in ("pending", "running"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not end within {timeout}s")


def play(base: str, scenario: list[Step]) -> list[tuple]:
    """Every step's (method, path, status, normalised headers, normalised answer), one step after the other;
    error details become <detail> (the messages differ, their shape must not)."""
    normalise, names = Normaliser(), {}
    with httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
        return [_play_step(client, step, normalise, names) for step in scenario]


def play_apart(base: str, scenario: list[Step], workers: int = 4) -> list[tuple]:
    """Like `play` for steps that share nothing (each on its own thread): several at once, each normalised
    on its own."""
    with httpx.Client(base_url=base, timeout=60, trust_env=False) as client, \
            ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda step: _play_step(client, step, Normaliser(), {}), scenario))


def _play_step(client: httpx.Client, step: Step, normalise: Normaliser, names: dict) -> tuple:
    path = fill(step.path, names)
    if step.settle:
        wait_until_ended(client, fill(step.settle, names))
    if step.raw is not None:
        response = client.request(step.method, path, content=step.raw, headers={"Content-Type": "application/json"})
    else:
        response = client.request(step.method, path, json=fill(step.body, names))
    headers = {k: normalise(response.headers[k]) for k in HEADERS if k in response.headers}
    if step.stream and response.status_code == 200:
        payload = apart_from_events(sse_frames(response.text))
    else:
        payload = response.json() if response.content else None
    if response.status_code >= 400:
        assert isinstance(payload, dict) and isinstance(payload.get("detail"), str), (path, payload)
        payload = {"detail": "<detail>"}
    elif step.save:
        names[step.save] = payload["run_id"] if "run_id" in payload else payload["cron_id"]
    return step.method, step.path, response.status_code, headers, normalise(payload)


def new_id() -> str:
    return str(uuid.uuid4())

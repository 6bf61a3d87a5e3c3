"""Helpers for the chat tests: a live server per module, SSE reading, starting runs and waiting for their end."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

import httpx

from tests.support_processes import live_server_fixture

# Short artificial latencies keep the agent's runs at a fraction of a second.
# Tracing is off except where a test turns it on: its background writes would race the test database's flush.
CHAT_ENV = {"CHAT_AGENT_DELAY_SCALE": "0.05", "CHAT_STORE_POLL_SECONDS": "0.1", "CHAT_MODEL": "",
            "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_GRAPH": "chat.agent.graph:build_graph", "CHAT_TRACING_PROJECT": ""}
EXAMPLE = "Research LangGraph streaming, and separately calculate 42 * 17."
TERMINAL = ("completed", "failed", "interrupted")


def live_chat_server(**env: str):
    """A module-scoped fixture: Daphne serving the whole app on the test database, with CHAT_ENV plus `env`."""
    return live_server_fixture({**CHAT_ENV, **env}, name="chat")


def new_thread() -> str:
    """A fresh thread id, known to no server yet."""
    return str(uuid.uuid4())


@dataclass
class Frame:
    id: str | None = None
    event: str | None = None
    data: dict | None = None
    comments: list[str] = field(default_factory=list)


def parse_frames(text: str) -> list[Frame]:
    """SSE frames of a (complete) chunk of text: id, event, JSON data, comment lines."""
    frames = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        frame, data_lines = Frame(), []
        for line in block.split("\n"):
            if line.startswith(":"):
                frame.comments.append(line[1:].strip())
            elif line.startswith("id:"):
                frame.id = line[3:].strip()
            elif line.startswith("event:"):
                frame.event = line[6:].strip()
            elif line.startswith("data:"):
                data_lines.append(line[5:].strip())
        if data_lines:
            frame.data = json.loads("\n".join(data_lines))
        frames.append(frame)
    return frames


class SseReader:
    """Reads an SSE response frame by frame (a frame is complete once its blank line arrived)."""

    def __init__(self):
        self.buffer = ""

    def feed(self, chunk: str) -> list[Frame]:
        self.buffer += chunk
        complete, sep, rest = self.buffer.rpartition("\n\n")
        if not sep:
            return []
        self.buffer = rest
        return parse_frames(complete + "\n\n")


def is_root_terminal(event: dict) -> bool:
    params = event.get("params") or {}
    return (event.get("method") == "lifecycle" and params.get("namespace") == []
            and (params.get("data") or {}).get("event") in TERMINAL)


def stream_events(url: str, body: dict, *, headers: dict | None = None, until=is_root_terminal, timeout: float = 30,
                  count: int | None = None) -> tuple[list[dict], list[Frame], httpx.Response]:
    """POST a stream request and read events until `until(event)` (or `count` events); return them all."""
    events, frames = [], []
    deadline = time.monotonic() + timeout
    with httpx.stream("POST", url, json=body, headers=headers or {}, timeout=timeout) as response:
        if response.status_code != 200:
            response.read()
            return [], [], response
        reader = SseReader()
        for chunk in response.iter_text():
            for frame in reader.feed(chunk):
                frames.append(frame)
                if frame.data is None:
                    continue
                events.append(frame.data)
                if (count is not None and len(events) >= count) or (count is None and until(frame.data)):
                    return events, frames, response
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream did not finish in {timeout}s; got {len(events)} events")
    return events, frames, response


def command(base: str, thread_id: str, method: str, params: dict | None = None, *, headers: dict | None = None,
            command_id: int = 1) -> httpx.Response:
    return httpx.post(f"{base}/api/threads/{thread_id}/commands", headers=headers or {}, timeout=30,
                      json={"id": command_id, "method": method, "params": params or {}})


def start_run(base: str, thread_id: str, text: str = EXAMPLE, *, headers: dict | None = None, **params) -> str:
    response = command(base, thread_id, "run.start", {
        "assistant_id": "_", "input": {"messages": [{"type": "human", "content": text}]}, **params}, headers=headers)
    body = response.json()
    assert response.status_code == 200 and body["type"] == "success", body
    return body["result"]["run_id"]


ALL_CHANNELS = ["values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom"]


def last_matching_seq(thread_id: str, body: dict, last_event_id: str | None = None) -> int | None:
    """The seq of the newest stored event a subscription matches (read straight from the shared test database)."""
    from agentruntime.events.subscriptions import parse_subscription
    from agentruntime.models import ChatEvent

    subscription = parse_subscription(body, last_event_id)
    rows = ChatEvent.objects.filter(thread_id=thread_id, seq__gt=subscription.since or 0).order_by("-seq")
    for seq, channel, namespace in rows.values_list("seq", "channel", "namespace"):
        if subscription.matches(channel, json.loads(namespace)):
            return seq
    return None


def replay(base: str, thread_id: str, body: dict | None = None, *, headers: dict | None = None) -> list[dict]:
    """Every stored event the subscription matches, read until the newest of them arrives."""
    body = body or {"channels": ALL_CHANNELS}
    target = last_matching_seq(thread_id, body, (headers or {}).get("Last-Event-ID"))
    events = []
    timeout = httpx.Timeout(30, read=0.3 if target is None else 30)
    with httpx.stream("POST", f"{base}/api/threads/{thread_id}/stream", json=body, headers=headers or {},
                      timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        reader = SseReader()
        try:
            for chunk in response.iter_text():
                events += [f.data for f in reader.feed(chunk) if f.data is not None]
                if target is not None and events and events[-1]["seq"] >= target:
                    break
        except httpx.ReadTimeout:
            pass
    return events


def last_run_events(events: list[dict]) -> list[dict]:
    """The events of the newest run: from its root `running` event on."""
    starts = [i for i, e in enumerate(events) if e["method"] == "lifecycle" and e["params"]["namespace"] == []
              and e["params"]["data"]["event"] == "running"]
    return events[starts[-1]:] if starts else []


def run_to_end(base: str, thread_id: str, text: str = EXAMPLE, *, headers: dict | None = None) -> list[dict]:
    """Start a run, wait for its end, and return its events."""
    start_run(base, thread_id, text, headers=headers)
    wait_for_run_end(base, thread_id, headers=headers)
    return last_run_events(replay(base, thread_id, headers=headers))


def wait_for_run_end(base: str, thread_id: str, *, headers: dict | None = None, timeout: float = 30) -> dict:
    """Wait for the newest run's root terminal event and return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tree = command(base, thread_id, "agent.getTree", headers=headers).json()
        if tree["type"] == "success" and tree["result"]["tree"]["status"] != "running":
            return tree["result"]["tree"]
        time.sleep(0.05)
    raise TimeoutError("the run did not end")

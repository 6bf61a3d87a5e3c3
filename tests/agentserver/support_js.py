"""LangChain's JS clients in their default Agent Server mode, against our servers.

The official `Client` in Node: tests/js/agent_server_client.mjs and what its report must say. React's `useStream`
(`@langchain/langgraph-sdk/react`) in Chromium: the test page (tests/js/use_stream_page.jsx) and what it must do on
the test project's chat, slow and asker graphs.

The page is served by the test itself. On the API's own origin, Playwright answers the page's two files from
memory (`page.route`) while every API call goes to the real server. On another origin (CORS, see
agentserver/cors.py), a loopback file server serves them: Chromium lets only a loopback page call a loopback API.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

from tests.chat.test_clients import JS_DIR, js_client_missing
from tests.support_processes import free_port

PAGE_PATH = "/__use_stream_test__/"
HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>useStream test page</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
  main { max-width: 720px; margin: 0 auto; padding: 16px; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  .meta { color: #5b6475; margin: 0 0 16px; overflow-wrap: anywhere; }
  ol { list-style: none; padding: 0; margin: 0 0 16px; display: grid; gap: 8px; }
  .message, .ticks li, .interrupt { background: #fff; border: 1px solid #dde1e8; border-radius: 8px;
    padding: 8px 12px; }
  .message.human { background: #e8f0ff; }
  .interrupt { margin-bottom: 16px; }
  .interrupt p { margin: 0 0 8px; }
  .who { font-weight: 600; margin-right: 8px; }
  form { display: flex; gap: 8px; }
  input { flex: 1; min-width: 0; padding: 8px; border: 1px solid #c4cad6; border-radius: 6px; font: inherit; }
  button { padding: 8px 14px; border: 0; border-radius: 6px; background: #2f5bd3; color: #fff; font: inherit; }
  button:disabled { background: #9aa8cc; }
  .error { color: #b00020; }
</style></head>
<body><div id="root"></div><script type="module" src="use_stream_page.js"></script></body></html>
"""


def run_agent_server_script(*, chat: tuple[str, str], slow: tuple[str, str], api_key: str) -> dict:
    """Run tests/js/agent_server_client.mjs with (api url, assistant) for the chat and slow graphs; its report."""
    missing = js_client_missing()
    if missing:
        pytest.skip(f"JS client tests need Node and tests/js packages: {missing}")
    env = {**os.environ, "CHAT_API_URL": chat[0], "CHAT_ASSISTANT": chat[1], "SLOW_API_URL": slow[0],
           "SLOW_ASSISTANT": slow[1], "AS_API_KEY": api_key}
    finished = subprocess.run(["node", "agent_server_client.mjs"], cwd=JS_DIR, capture_output=True, text=True,
                              timeout=180, env=env)
    lines = finished.stdout.strip().splitlines()
    assert lines, finished.stderr
    report = json.loads(lines[-1])
    assert finished.returncode == 0 and "failure" not in report, report.get("failure") or finished.stderr
    return report


def assert_report(report: dict) -> None:
    """What every server must answer the script (the service's /api and a deployment alike)."""
    join = report["join"]
    assert join["thread_metadata"]["via"] == "js-sdk"
    assert join["created_status"] in ("pending", "running") and join["final_status"] == "success"
    assert [(m["type"], m["content"]) for m in join["messages"]] == [
        ("human", "hello brave new world"), ("ai", "world new brave hello")]

    stream = report["stream"]
    assert stream["events"][0] == "metadata" and stream["metadata"]["run_id"] == stream["created"]["run_id"]
    assert {"values", "updates", "messages"} <= set(stream["events"])
    tokens = [t for t in stream["tokens"] if t["type"] in ("AIMessageChunk", "ai")]
    # The scripted model streams word by word: several chunks of one message, from the `respond` node.
    assert len(tokens) >= 4 and len({t["id"] for t in tokens}) == 1 and {t["node"] for t in tokens} == {"respond"}
    assert "".join(t["content"] for t in tokens).split() == ["four", "three", "two", "one"]
    assert [list(update) for update in stream["updates"]] == [["respond"]]
    # The second run on the thread sees the first one's messages too.
    assert [m["content"] for m in stream["last_values"]["messages"]] == [
        "hello brave new world", "world new brave hello", "one two three four", "four three two one"]

    resume = report["resume"]
    assert resume["final_status"] == "success"
    ids = [p["id"] for p in resume["whole"]]
    assert all(ids) and len(set(ids)) == len(ids)
    # The first join stopped after two ticks; the second picks up right after the last id it had seen.
    assert [p["id"] for p in resume["rest"]] == ids[ids.index(resume["last_event_id"]) + 1:]
    assert resume["first"] + resume["rest"] == resume["whole"]
    ticks = [p["data"]["tick"] for p in resume["whole"] if p["event"] == "custom"]
    assert ticks == [1, 2, 3, 4, 5]
    assert resume["whole"][-1]["event"] == "values" and resume["whole"][-1]["data"]["ticks"] == [1, 2, 3, 4, 5]

    store = report["store"]
    root = store["root"]
    assert store["item"]["namespace"] == [root, "u1"] and store["item"]["value"] == {"theme": "light", "size": 5}
    assert store["item"]["createdAt"] == store["item"]["created_at"] and store["item"]["updated_at"]
    assert store["found"] == [{"namespace": [root, "u1"], "key": "prefs", "value": {"theme": "light", "size": 5}}]
    assert store["namespaces"] == [[root, "u1"], [root, "u2"]] and store["deleted"] is None

    crons = report["crons"]
    stateless, on_thread = crons["stateless"], crons["onThread"]
    assert stateless["thread_id"] is None and stateless["on_run_completed"] == "keep"
    assert stateless["payload"]["config"]["configurable"]["cron_id"] == stateless["cron_id"]
    assert on_thread["thread_id"] == crons["thread_id"] and on_thread["enabled"] is False
    assert on_thread["end_time"].startswith("2100-01-01T00:00:00")
    assert crons["found"] == [stateless["cron_id"], on_thread["cron_id"]] and crons["counted"] == 2
    assert crons["selected"] == [{"cron_id": on_thread["cron_id"], "enabled": False}]
    updated = crons["updated"]
    assert updated["schedule"] == "30 6 * * *" and updated["enabled"] is True
    assert updated["metadata"] == {"marker": on_thread["metadata"]["marker"], "kind": "thread", "stage": 2}
    assert crons["refused"] == 422 and crons["left"] == 0

    cancel = report["cancel"]
    assert cancel["seen_status"] == "running" and cancel["final_status"] == "interrupted"
    # Cancelled between two ticks, its last checkpoint still has a next node: "interrupted", as langgraph dev says.
    assert cancel["thread_status"] == "interrupted"


def build_page() -> bytes:
    """The page's bundle, built now with esbuild from tests/js (skips without Node or the npm packages)."""
    missing = js_client_missing()
    esbuild = JS_DIR / "node_modules" / "esbuild" / "package.json"
    if missing or not esbuild.exists():
        pytest.skip(f"The useStream page needs Node and tests/js packages (scripts/test-deps.d/10-node.sh): "
                    f"{missing or 'esbuild is not installed'}")
    built = subprocess.run(["node", "build_use_stream_page.mjs"], cwd=JS_DIR, capture_output=True, text=True,
                           timeout=120)
    assert built.returncode == 0, built.stderr
    return (JS_DIR / "dist" / "use_stream_page.js").read_bytes()


def page_files(bundle: bytes) -> dict[str, tuple[str, bytes]]:
    """The page's files by their name under PAGE_PATH: (content type, body)."""
    return {"": ("text/html", HTML.encode()), "use_stream_page.js": ("text/javascript", bundle)}


class PageServer:
    """The page's files on http://localhost:<free port> (another origin than the API's 127.0.0.1), in a thread."""

    def __init__(self, bundle: bytes):
        self.bundle = bundle
        files = page_files(bundle)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                found = files.get(urlsplit(self.path).path.removeprefix(PAGE_PATH))
                if found is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", found[0])
                self.send_header("Content-Length", str(len(found[1])))
                self.end_headers()
                self.wfile.write(found[1])

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.origin = f"http://localhost:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, name="use-stream-page", daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class UseStreamPage:
    """Opens the test page for one graph: on the API's origin, or on `page_server`'s origin when given."""

    def __init__(self, new_page, bundle: bytes, *, api_url: str, api_key: str, page_server: PageServer | None = None):
        self.new_page, self.bundle, self.api_url, self.api_key = new_page, bundle, api_url, api_key
        parts = urlsplit(api_url)
        self.page_server = page_server
        self.origin = page_server.origin if page_server else f"{parts.scheme}://{parts.netloc}"

    def open(self, *, assistant: str, mode: str, viewport=None):
        page = self.new_page(viewport=viewport)
        if self.page_server is None:
            files = page_files(self.bundle)

            def serve(route):
                content_type, body = files[urlsplit(route.request.url).path.removeprefix(PAGE_PATH)]
                route.fulfill(status=200, content_type=content_type, body=body)

            page.route(f"{self.origin}{PAGE_PATH}*", serve)
        query = urlencode({"apiUrl": self.api_url, "apiKey": self.api_key, "assistant": assistant, "mode": mode})
        page.goto(f"{self.origin}{PAGE_PATH}?{query}")
        page.get_by_test_id("send").wait_for()
        return page

    def runs_of(self, thread_id: str) -> list[dict]:
        return self._get(f"/threads/{thread_id}/runs")

    def thread_of(self, thread_id: str) -> dict:
        return self._get(f"/threads/{thread_id}")

    def _get(self, path: str):
        response = httpx.get(f"{self.api_url}{path}", headers={"X-Api-Key": self.api_key}, timeout=30,
                             trust_env=False)
        assert response.status_code == 200, response.text
        return response.json()


def send(page, text: str) -> None:
    page.get_by_test_id("input").fill(text)
    page.get_by_test_id("send").click()


def wait_idle(page, timeout: float = 60_000) -> None:
    page.wait_for_function("document.querySelector('[data-testid=status]').textContent.trim() === 'idle'",
                           timeout=timeout)


def assert_no_errors(page) -> None:
    assert page.problems == []
    assert page.evaluate("window.__errors") == []
    assert page.get_by_test_id("error").count() == 0


def chat_streams_tokens(site: UseStreamPage, assistant: str, viewport=None):
    """Submit a message on the chat graph: its reply grows word by word on screen, then is final."""
    page = site.open(assistant=assistant, mode="chat", viewport=viewport)
    send(page, "alpha beta gamma delta epsilon")
    final = "epsilon delta gamma beta alpha"
    page.wait_for_function("texts => window.__shownAiTexts.includes(texts)", arg=final, timeout=60_000)
    wait_idle(page)
    shown = page.evaluate("window.__shownAiTexts")
    # Partial text (a proper prefix of the answer) was on screen before the whole answer.
    assert shown[-1] == final
    partial = [text for text in shown[:-1] if text and final.startswith(text) and text != final]
    assert partial, shown
    messages = page.get_by_test_id("message")
    assert [messages.nth(i).get_attribute("data-type") for i in range(messages.count())] == ["human", "ai"]
    assert_no_errors(page)
    return page


def slow_run_survives_a_reload(site: UseStreamPage, assistant: str, steps: int = 16):
    """A long run on the slow graph: reload mid-run, and the page rejoins the same run and sees it to its end."""
    page = site.open(assistant=assistant, mode="slow")
    send(page, str(steps))
    page.wait_for_function("document.querySelectorAll('[data-testid=tick]').length >= 2", timeout=60_000)
    thread_id = page.get_by_test_id("thread").text_content()
    run_id = page.evaluate(f"sessionStorage.getItem('lg:stream:{thread_id}')")
    assert run_id, "useStream keeps the running run's id for reconnectOnMount"
    requests = []
    page.on("request", lambda request: requests.append(request))
    page.reload()
    # After the reload nothing is submitted: the page rejoins the stored run (joinStream, Last-Event-ID -1).
    assert page.get_by_test_id("thread").text_content() == thread_id
    page.wait_for_function("document.querySelector('[data-testid=status]').textContent.trim() === 'running'",
                           timeout=30_000)
    page.wait_for_function(f"document.querySelectorAll('[data-testid=tick]').length === {steps}", timeout=90_000)
    wait_idle(page)
    ticks = page.get_by_test_id("tick").all_text_contents()
    assert ticks == [f"tick {n}" for n in range(1, steps + 1)]
    assert page.evaluate(f"sessionStorage.getItem('lg:stream:{thread_id}')") is None
    api_calls = [(r.method, urlsplit(r.url).path.removeprefix(urlsplit(site.api_url).path), r.headers)
                 for r in requests if r.url.startswith(site.api_url)]
    joins = [headers.get("last-event-id") for method, path, headers in api_calls
             if (method, path) == ("GET", f"/threads/{thread_id}/runs/{run_id}/stream")]
    assert joins == ["-1"] and not [path for method, path, _ in api_calls if method == "POST"]
    runs = site.runs_of(thread_id)
    assert [(run["run_id"], run["status"]) for run in runs] == [(run_id, "success")]
    assert_no_errors(page)
    return page


def interrupt_is_shown_and_resumed(site: UseStreamPage, assistant: str, viewport=None, on_interrupt=None):
    """The asker graph stops on `interrupt()`: the page shows its value, and resuming runs it to completion.

    `on_interrupt(page)` is called while the interrupt is on screen (to take a screenshot)."""
    page = site.open(assistant=assistant, mode="asker", viewport=viewport)
    send(page, "Ship it?")
    question = page.get_by_test_id("interrupt-question")
    question.wait_for(timeout=60_000)
    assert question.text_content() == "Ship it?"
    wait_idle(page)
    thread_id = page.get_by_test_id("thread").text_content()
    # As on the Agent Server: the run succeeded, its thread waits on the interrupt.
    assert [run["status"] for run in site.runs_of(thread_id)] == ["success"]
    assert site.thread_of(thread_id)["status"] == "interrupted"
    if on_interrupt is not None:
        on_interrupt(page)
    page.get_by_test_id("resume").click()
    page.get_by_test_id("answer").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_test_id("answer").text_content() == "Answer: yes"
    assert page.get_by_test_id("interrupt").count() == 0
    assert [run["status"] for run in site.runs_of(thread_id)] == ["success", "success"]
    assert site.thread_of(thread_id)["status"] == "idle"
    assert_no_errors(page)
    return page

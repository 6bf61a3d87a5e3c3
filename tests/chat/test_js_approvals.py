"""The official JS client (`@langchain/langgraph-sdk` 1.9.24 in Node) answers the deep agent's approvals over the
Agent Streaming Protocol: approve, edit and reject inside a subagent, the
coordinator's own delegation approved, two subagents answered in one batch, an answer
to an interrupt already answered, and a reload while waiting."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.chat.support_chat import live_chat_server
from tests.chat.test_clients import JS_DIR, js_client_missing

pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
# Run-scoped replay, as the page: a reloaded page replays from the newest run.
chat_server = live_chat_server(CHAT_APPROVE_TOOLS="calculator,search_web", CHAT_REPLAY_SCOPE="run")


def js_approvals_report(base: str) -> dict:
    """Run tests/js/approvals_client.mjs against the server at `base` and return its report (skip without Node)."""
    missing = js_client_missing()
    if missing:
        pytest.skip(f"JS client tests need Node and tests/js packages: {missing}")
    finished = subprocess.run(["node", "approvals_client.mjs"], cwd=JS_DIR, capture_output=True, text=True,
                              timeout=180, env={**os.environ, "CHAT_API_URL": f"{base}/api"})
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    assert finished.returncode == 0 and "failure" not in report, report.get("failure") or finished.stderr
    return report


def test_the_official_js_client_approves_edits_rejects_and_batches_subagent_calls(chat_server, transactional_db):
    report = js_approvals_report(chat_server.url)

    for name in ("approve", "edit", "reject"):
        (asked,) = report[name]["asked"]
        # Asked in the math-whiz's namespace, about its calculator call.
        assert asked["tool"] == "calculator" and asked["args"] == {"expression": "42 * 17"}
        assert len(asked["namespace"]) == 1 and asked["namespace"][0].startswith("tools:")
        assert report[name]["error"] is None
    assert "714" not in report["edit"]["text"] and "714" not in report["reject"]["text"]
    assert report["stale"]["error"] == "no_such_interrupt", report["stale"]

    batch = report["batch"]
    assert sorted(a["tool"] for a in batch["asked"]) == ["calculator", "search_web"]
    assert len({tuple(a["namespace"]) for a in batch["asked"]}) == 2
    assert "abacus" in batch["text"].lower() and batch["error"] is None

    # The coordinator's own delegation, guarded by the run's config: asked at the root namespace.
    (delegation,) = report["coordinator"]["asked"]
    assert delegation["tool"] == "task" and delegation["namespace"] == []
    assert delegation["args"]["subagent_type"] == "math-whiz" and report["coordinator"]["error"] is None

    reload = report["reload"]
    assert [a["id"] for a in reload["after"]] == [a["id"] for a in reload["before"]]
    assert reload["after"][0]["namespace"] == reload["before"][0]["namespace"] and reload["error"] is None

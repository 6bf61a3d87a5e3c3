"""A served project (`serve_graphs`, as a deployed revision runs it, with its periodic jobs) through the SDK: every
cron route, a cron of every second that fires on its thread (each tick a run that completes), and the project's
`checkpointer.ttl` given to its threads, which then disappear from reads before the sweep deletes them."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from agentruntime.models import ChatThread
from tests.agentserver import support_cron_scenarios as cron_scenarios
from tests.agentserver.support_sdk import CLIENT_KINDS, PROJECT, SdkClient, status_of
from tests.support_processes import BASE_DIR, graphs_served, wait_for

pytestmark = pytest.mark.live


ENV = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
       "CHAT_TRACING_PROJECT": "", "AGENTSERVER_CRON_POLL_SECONDS": "1"}
# Threads live 3 seconds; the sweep looks every 6 (sweep_interval_minutes may be a fraction here).
TTL = {"strategy": "delete", "default_ttl": 0.05, "sweep_interval_minutes": 0.1}


@pytest.fixture
def served(transactional_db, tmp_path):
    with graphs_served(BASE_DIR / PROJECT / "langgraph.json", env=ENV, log_path=tmp_path / "served.log") as url:
        yield url


@pytest.fixture
def served_with_ttl(transactional_db, tmp_path):
    project = shutil.copytree(BASE_DIR / PROJECT, tmp_path / "project")
    config = json.loads((project / "langgraph.json").read_text())
    (project / "langgraph.json").write_text(json.dumps({**config, "checkpointer": {"ttl": TTL}}))
    with graphs_served(project / "langgraph.json", env=ENV, log_path=tmp_path / "served.log") as url:
        yield url


@pytest.mark.parametrize("kind", CLIENT_KINDS)
def test_a_served_project_answers_every_cron_route_and_fires_its_crons(served, kind):
    client = SdkClient(kind, served)
    try:
        cron_scenarios.cron_lifecycle(client, "echo", served, {})
        runs = cron_scenarios.cron_fires_on_its_thread(client, "echo", "tick")
        thread_id = runs[0]["thread_id"]
        wait_for(lambda: client.threads.get(thread_id)["status"] == "idle", timeout=60)
        assert {run["status"] for run in client.runs.list(thread_id)} == {"success"}
        assert client.threads.get_state(thread_id)["values"]["echo"] == "tick"
    finally:
        client.close()


def test_a_served_projects_checkpointer_ttl_expires_its_threads_which_are_never_shown_once_expired(
        served_with_ttl):
    client = SdkClient("sync", served_with_ttl)
    try:
        thread_id = client.threads.create(metadata={"ttl": "default"})["thread_id"]
        own = client.threads.create(ttl={"strategy": "delete", "ttl": 60})["thread_id"]
        assert ChatThread.objects.get(pk=thread_id).ttl == {"strategy": "delete", "ttl": 0.05}

        wait_for(lambda: httpx.get(f"{served_with_ttl}/threads/{thread_id}", timeout=30).status_code == 404,
                 timeout=60)
        assert status_of(lambda: client.threads.get(thread_id))[0] == 404
        assert [t["thread_id"] for t in client.threads.search(metadata={"ttl": "default"})] == []
        assert client.threads.count(metadata={"ttl": "default"}) == 0
        wait_for(lambda: not ChatThread.objects.filter(pk=thread_id).exists(), timeout=60)
        assert client.threads.get(own)["thread_id"] == own
    finally:
        client.close()

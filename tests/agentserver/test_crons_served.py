"""Crons on a served project (`serve_graphs`, as a deployed revision runs it, with its periodic jobs): the SDK's
every route, and a cron of every second that fires on its thread, each tick a run that completes."""

from __future__ import annotations

import pytest

from tests.agentserver import support_cron_scenarios as cron_scenarios
from tests.agentserver.support_sdk import CLIENT_KINDS, PROJECT, SdkClient
from tests.support_processes import BASE_DIR, graphs_served, wait_for

pytestmark = pytest.mark.live


@pytest.fixture
def served(transactional_db, tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
           "CHAT_TRACING_PROJECT": "", "AGENTSERVER_CRON_POLL_SECONDS": "1"}
    with graphs_served(BASE_DIR / PROJECT / "langgraph.json", env=env, log_path=tmp_path / "served.log") as url:
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

"""The official JS SDK's `Client` (`@langchain/langgraph-sdk` 1.9.24 in Node, its default Agent Server mode) against
the service's own /api: create and join, stream modes, join with Last-Event-ID resume, cancel.

The same script (with the store and crons) runs against a deployed revision in
tests/deployments/test_live_js_clients.py.
"""

from __future__ import annotations

import pytest

from agentruntime.models import ChatRun
from tests.agentserver.support_js import assert_report, run_agent_server_script
from tests.chat.support_chat import live_chat_server

pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
PROJECT_GRAPHS = "./tests/agentserver/project/graphs.py"
# Two servers on one test database serve different graphs under the same name ("agent"): each must execute only
# the runs it accepted (its executor is told at once), never find the other's by polling the shared queue.
ONLY_OWN_RUNS = {"CHAT_QUEUE_POLL_SECONDS": "3600"}
chat_server = live_chat_server(CHAT_GRAPH=f"{PROJECT_GRAPHS}:chat_graph", CHAT_ALLOW_ANONYMOUS="false", **ONLY_OWN_RUNS)
slow_server = live_chat_server(CHAT_GRAPH=f"{PROJECT_GRAPHS}:slow_graph", CHAT_ALLOW_ANONYMOUS="false", **ONLY_OWN_RUNS)


@pytest.fixture
def api_key(transactional_db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


def test_the_official_js_client_creates_joins_streams_resumes_and_cancels_runs(chat_server, slow_server, api_key):
    report = run_agent_server_script(chat=(f"{chat_server.url}/api", "agent"), slow=(f"{slow_server.url}/api", "agent"),
                                     api_key=api_key)
    assert_report(report)
    assert ChatRun.objects.get(pk=report["cancel"]["run_id"]).cancel_requested_at is not None

"""Shared fixtures: workspaces and API clients for an owner and an outsider, live processes, S3.

How tests/ names its files: tests are `test_<subject>.py`, fixtures live in `conftest.py`, and every other module a
test imports is a helper named `support_<topic>.py` (tests/support_processes.py, tests/chat/support_chat.py, ...), so
helpers sort together and never look like tests. Only modules that another program loads by a name we hand it are
named for that role instead: `disk_full_settings.py` (DJANGO_SETTINGS_MODULE), `error_urls.py` (a URLconf for
`pytest.mark.urls`), `fuzz_hooks.py` (SCHEMATHESIS_HOOKS), `chat/graphs.py` (a CHAT_GRAPH spec), the LangGraph project
under agentserver/project/ (its langgraph.json names ./graphs.py), and the JS clients under js/.
"""

from __future__ import annotations

import sys

import pytest
from rest_framework.test import APIClient

from accounts.services import api_key_create, workspace_create
from tests.support_processes import ChildProcess, LiveServer, server_fixture
from tests.support_s3 import S3Server
from tests.support_webhooks import webhook_receiver  # noqa: F401 (a fixture, for every test module)


@pytest.fixture(autouse=True)
def _close_chat_checkpointer_connections():
    """The chat checkpointer's worker threads keep connections open: close them after each test, or
    PostgreSQL refuses to drop the test database at the end."""
    yield
    if (module := sys.modules.get("agentruntime.checkpointer.saver")) is not None:
        module.close_checkpointer()


@pytest.fixture
def workspace(db):
    return workspace_create(name="owner-workspace")


@pytest.fixture
def other_workspace(db):
    return workspace_create(name="outsider-workspace")


@pytest.fixture
def make_client(db):
    """make_client(workspace, permissions=None, tenant=True) -> an APIClient sending a fresh key."""

    def make(workspace, permissions=None, tenant=True, workspaces=None):
        _, raw_key = api_key_create(workspaces=workspaces or [workspace], permissions=permissions)
        client = APIClient()
        headers = {"HTTP_X_API_KEY": raw_key}
        if tenant:
            headers["HTTP_X_TENANT_ID"] = str(workspace.id)
        client.credentials(**headers)
        client.raw_key = raw_key
        client.workspace = workspace
        return client

    return make


@pytest.fixture
def api_client(make_client, workspace):
    """The owner: every permission in `workspace`."""
    return make_client(workspace)


@pytest.fixture
def outsider_client(make_client, other_workspace):
    """Someone with every permission, but in another workspace."""
    return make_client(other_workspace)


@pytest.fixture
def live_server_process(transactional_db, tmp_path):
    """The whole service under Daphne on a free port, sharing this test's database."""
    server = LiveServer(log_path=tmp_path / "server.log").start()
    yield server
    server.stop()


@pytest.fixture
def start_process(transactional_db, tmp_path):
    """start_process("run_worker", env={...}) starts a manage.py command; all are stopped afterwards."""
    started = []

    def start(*args, env=None):
        child = ChildProcess(*args, env=env, log_path=tmp_path / f"{args[0]}-{len(started)}.log").start()
        started.append(child)
        return child

    yield start
    for child in started:
        child.stop()


s3_server = server_fixture(S3Server)


@pytest.fixture
def s3(s3_server):
    """The loopback S3 server, emptied and with auth enforcement off at the start of each test."""
    s3_server.reset()
    yield s3_server
    s3_server.set_auth_enforced(False)

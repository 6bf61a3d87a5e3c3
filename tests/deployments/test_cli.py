"""LangChain's own CLI (langgraph-cli 0.4.40, unchanged) deploys, lists, reads logs and deletes on our server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest

from accounts.services import api_key_create
from core.process_identity import pid_alive
from deployments.models import Deployment, Revision
from tests.deployments.support_projects import make_project
from tests.support_processes import wait_for

pytestmark = pytest.mark.live

LANGGRAPH = str(Path(sys.executable).parent / "langgraph")


@pytest.fixture
def langgraph(stack_factory, workspace, tmp_path):
    if not shutil.which(LANGGRAPH):
        pytest.skip("langgraph-cli is not installed: pip install -r requirements-dev.txt")
    stack = stack_factory()
    key = api_key_create(workspaces=[workspace], permissions=["deployments:manage"])[1]
    project = make_project(tmp_path / "cli-project", files={".env": "OPENAI_API_KEY=sk-from-dotenv\n"})
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_HOST_URL": stack.url, "LANGGRAPH_HOST_API_KEY": key,
           "NO_PROXY": "127.0.0.1,localhost"}

    def run(*args: str, expect: int = 0) -> str:
        result = subprocess.run([LANGGRAPH, "deploy", *args], cwd=project, env=env, capture_output=True, text=True,
                                timeout=600)
        output = result.stdout + result.stderr
        assert result.returncode == expect, f"langgraph deploy {' '.join(args)} exited {result.returncode}:\n{output}"
        return output

    run.stack = stack
    return run


def test_langgraph_deploy_remote_and_its_subcommands_work_unchanged(langgraph):
    output = langgraph("--remote", "--no-input", "--name", "cli-agent", "--verbose")
    assert "Deployment successful!" in output
    deployment = Deployment.objects.get(name="cli-agent")
    assert f"URL: {langgraph.stack.url}/deployments/{deployment.id}" in output
    # The printed status link answers: a visitor not logged in is sent to the admin login, which comes back to it.
    status_link = f"{langgraph.stack.url}/o/{deployment.workspace_id}/host/deployments/{deployment.id}"
    assert f"View status: {status_link}" in output
    answer = httpx.get(status_link, trust_env=False)
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/admin/login/?next=" + quote(urlsplit(status_link).path)
    # (--verbose streams build-log lines only while a poll finds the revision building: timing-dependent, so the
    # build log is checked below with `deploy logs`.)
    revision = Revision.objects.get(deployment=deployment)
    assert revision.status == "DEPLOYED" and deployment.secret_names == ["OPENAI_API_KEY"]
    # The CLI uploads the project's .env; it is dropped from the stored source.
    workspace_dir = Path(langgraph.stack.env["DEPLOY_ROOT"]) / "revisions" / str(revision.id) / "src"
    assert (workspace_dir / "graph.py").is_file() and not (workspace_dir / ".env").exists()

    listed = json.loads(langgraph("list", "--json"))
    assert {"id": str(deployment.id), "name": "cli-agent"} in listed
    assert "DEPLOYED" in langgraph("revisions", "list", str(deployment.id))
    build_logs = langgraph("logs", "--deployment-id", str(deployment.id), "--type", "build")
    assert f"Using latest revision: {revision.id}" in build_logs and "[INFO] graph 'agent': OK" in build_logs
    assert "Health check passed" in langgraph("logs", "--deployment-id", str(deployment.id))
    assert "Serving graph 'agent'" in langgraph("logs", "--name", "cli-agent", "--revision-id", str(revision.id))

    pid = revision.serving_pid
    assert f"Deleted deployment {deployment.id}." in langgraph("delete", str(deployment.id), "--force")
    wait_for(lambda: not pid_alive(pid), timeout=30)
    wait_for(lambda: not Deployment.objects.filter(id=deployment.id).exists(), timeout=30)
    assert "failed with status 404" in langgraph("delete", str(deployment.id), "--force", expect=1)

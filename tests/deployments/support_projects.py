"""A tiny LangGraph project, as a folder, a tarball or a file:// git repository."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

# Returns the process environment, so tests can see what a served graph sees. With the secret
# EXIT_AT_START=1 the serving process (not the build's check) exits at once.
GRAPH = '''
import os
import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

if os.environ.get("EXIT_AT_START") == "1" and "serve_graphs" in sys.argv:
    print("exiting at start as asked", flush=True)
    os._exit(3)


class State(TypedDict, total=False):
    messages: list
    env: dict
    version: str


def answer(state: State) -> State:
    return {"env": dict(os.environ), "version": VERSION}


VERSION = "v1"
builder = StateGraph(State)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile()
'''

CONFIG = {"dependencies": ["."], "graphs": {"agent": "./graph.py:graph"}}


def make_project(root: Path, *, graph: str = GRAPH, config: dict | str | None = None, files: dict | None = None,
                 version: str = "v1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "graph.py").write_text(graph.replace('VERSION = "v1"', f'VERSION = "{version}"'))
    text = config if isinstance(config, str) else json.dumps(config or CONFIG)
    (root / "langgraph.json").write_text(text)
    for name, content in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root


def tarball(root: Path, *, extra: list[tarfile.TarInfo] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(root)))
        for member in extra or []:
            data = b"x" * member.size if member.isfile() else None
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def git_repo(root: Path) -> str:
    """Commit `root` as a git repository; return its file:// URL."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.test", "HOME": str(root), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    for command in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "init"]):
        subprocess.run(command, cwd=root, env=env, check=True)
    return f"file://{root}"




def deploy_test_project(api, tmp_path: Path, *, name: str, project: Path | None = None) -> str:
    """Deploy `project` (by default tests/agentserver/project) from a tarball through `api`
    (tests.deployments.test_live.Api); the deployment's stable URL once its revision is DEPLOYED."""
    import shutil

    from tests.agentserver.support_sdk import PROJECT
    from tests.support_processes import BASE_DIR

    if project is None:
        project = shutil.copytree(BASE_DIR / PROJECT, tmp_path / "project")
    return deploy_project(api, project, name=name)


def deploy_project(api, project: Path, *, name: str, secrets: list[dict] | None = None) -> str:
    """Deploy the project folder `project` from a tarball through `api`; the deployment's stable URL once its
    revision is DEPLOYED."""
    deployment = api.create({"name": name, "source": "internal_source", "source_revision_config": {},
                             "source_config": {"deployment_type": "dev"}, "secrets": secrets or []})
    object_path = api.upload(deployment["id"], tarball(project))
    revision = api.call("PATCH", f"/v2/deployments/{deployment['id']}", json={
        "revision_source": "internal_source",
        "source_revision_config": {"source_tarball_path": object_path, "langgraph_config_path": "langgraph.json"},
    })["latest_revision_id"]
    api.wait_status(deployment["id"], revision, "DEPLOYED")
    return api.call("GET", f"/v2/deployments/{deployment['id']}")["source_config"]["custom_url"]

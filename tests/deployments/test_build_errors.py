"""A build that fails says why where a user looks first: the README's build-log command shows the failure on its
first page, the revision's JSON carries the one-line reason, and a graph's own error names the project's file and
line, never this service's internals."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest

from tests.deployments.support_projects import CONFIG, GRAPH, make_project, tarball
from tests.support_processes import BASE_DIR

pytestmark = pytest.mark.django_db(transaction=True)

# Packages the service has installed: pip says "Requirement already satisfied" for each and their dependencies, so
# the failure comes after more than a page of them, as for a real project.
REQUIREMENTS = "langgraph\nlangchain-core\nhttpx\ndjango\ndjangorestframework\nchannels\n"
SYNTAX_ERROR = GRAPH.replace("def answer(state: State) -> State:", "def answer(state: State) -> State")
IMPORT_ERROR = GRAPH.replace('VERSION = "v1"', 'VERSION = "v1"\nraise RuntimeError("no model key configured")')


def readme_build_log_query() -> dict[str, str]:
    """The query parameters of the README's build-log command."""
    found = re.findall(r"\$REVISION_URL/logs\?([^\"'\s`]+)", (BASE_DIR / "README.md").read_text())
    assert len(found) == 1, f"the README should give one build-log command, found {found}"
    return dict(parse_qsl(found[0]))


def failed_build(api_client, internal_deployment, tmp_path, run_jobs, graph: str,
                 requirements: str = REQUIREMENTS) -> tuple[str, dict]:
    project = make_project(tmp_path / "broken", graph=graph, config=CONFIG, files={"requirements.txt": requirements})
    deployment = internal_deployment(data=tarball(project))
    run_jobs()
    url = f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}"
    revision = api_client.get(url).json()
    assert revision["status"] == "BUILD_FAILED", revision
    return url, revision


def test_a_syntax_error_is_on_the_first_page_of_the_readmes_build_log_command(api_client, internal_deployment,
                                                                              tmp_path, run_jobs):
    url, revision = failed_build(api_client, internal_deployment, tmp_path, run_jobs, SYNTAX_ERROR)
    everything = api_client.get(f"{url}/logs", {"type": "build", "limit": 1000}).json()["logs"]
    assert len(everything) > 50, "pip's lines should fill more than the default page"
    page = api_client.get(f"{url}/logs", readme_build_log_query()).json()["logs"]
    errors = [line["message"] for line in page if line["level"] == "ERROR"]
    assert any("graph.py" in message and "line 19" in message for message in errors), page
    assert "graph.py" in revision["status_message"] and "line 19" in revision["status_message"], revision


def test_pips_own_error_is_logged_at_error_and_is_the_revisions_reason(api_client, internal_deployment, tmp_path,
                                                                      run_jobs):
    url, revision = failed_build(api_client, internal_deployment, tmp_path, run_jobs, GRAPH,
                                 requirements=REQUIREMENTS + "surely-not-a-package-6f1d==1.0\n")
    page = api_client.get(f"{url}/logs", readme_build_log_query()).json()["logs"]
    errors = [line["message"] for line in page if line["level"] == "ERROR"]
    assert any(m.startswith("ERROR: No matching distribution found for surely-not-a-package-6f1d") for m in errors)
    assert "No matching distribution found for surely-not-a-package-6f1d" in revision["status_message"]

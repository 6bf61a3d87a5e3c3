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
# Raised at import, a call deep: the traceback shows both of the project's frames.
IMPORT_ERROR = GRAPH.replace('VERSION = "v1"', """VERSION = "v1"


def require_key():
    raise RuntimeError("no model key configured")


require_key()""")
# Raised only when the revision's server loads it, after the build's check passed.
SERVE_ERROR = GRAPH.replace('VERSION = "v1"', """VERSION = "v1"
if "serve_graphs" in sys.argv:
    raise RuntimeError("no model key configured")""")
# The project's graph where a template puts it, under src/: the user's path is src/agent/graph.py.
NESTED = {**CONFIG, "graphs": {"agent": "./src/agent/graph.py:graph"}}
# What the service's internals look like in a message: an absolute path under the revision's directory, the module
# name a graph file is imported under, a frame of the loader.
INTERNALS = ("/revisions/", "chat_graph_", "served_graphs.py", "check_graphs.py", "serve_graphs.py")


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


def line_of(source: str, text: str) -> int:
    """The number of the first line of `source` that starts with `text` (its indentation aside)."""
    return next(number for number, line in enumerate(source.splitlines(), start=1) if line.strip().startswith(text))


def nested_failure(api_client, internal_deployment, tmp_path, run_jobs, graph: str) -> tuple[str, dict]:
    project = make_project(tmp_path / "nested", config=NESTED, files={"src/agent/graph.py": graph})
    deployment = internal_deployment(data=tarball(project))
    run_jobs()
    url = f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}"
    return url, api_client.get(url).json()


@pytest.mark.parametrize("graph, failing_line, raised", [
    (SYNTAX_ERROR, "def answer(state: State) -> State", "SyntaxError: expected ':'"),
    (IMPORT_ERROR, 'raise RuntimeError("no model key configured")', "RuntimeError: no model key configured"),
], ids=["syntax-error", "raised-at-import"])
def test_a_graph_that_fails_to_load_is_told_in_the_projects_own_file_and_line_at_error(
        api_client, internal_deployment, tmp_path, run_jobs, graph, failing_line, raised):
    url, revision = nested_failure(api_client, internal_deployment, tmp_path, run_jobs, graph)
    assert revision["status"] == "BUILD_FAILED", revision
    where = f"src/agent/graph.py, line {line_of(graph, failing_line)}: {raised}"
    assert where in revision["status_message"], revision["status_message"]
    build_log = api_client.get(f"{url}/logs", {"type": "build", "limit": 1000}).json()["logs"]
    for internal in INTERNALS:
        assert not [line for line in build_log if internal in line["message"]], internal
        assert internal not in revision["status_message"]
    # The report: the project's frames (the file relative to the project, with its line), then what was raised.
    report = [line for line in build_log if line["level"] == "ERROR"]
    frame = f'  File "src/agent/graph.py", line {line_of(graph, failing_line)}'
    assert any(line["message"].startswith(frame) for line in report), report
    assert any(line["message"] == raised for line in report), report
    assert report[-1]["message"].startswith("BUILD_FAILED: ") and where in report[-1]["message"]


def test_a_missing_graph_attribute_names_the_projects_file_not_the_module_it_is_imported_as(
        api_client, internal_deployment, tmp_path, run_jobs):
    project = make_project(tmp_path / "nested", config={**NESTED, "graphs": {"agent": "./src/agent/graph.py:nope"}},
                           files={"src/agent/graph.py": GRAPH})
    deployment = internal_deployment(data=tarball(project))
    run_jobs()
    revision = api_client.get(f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}").json()
    assert "Graph 'agent' failed to load: Graph spec 'src/agent/graph.py:nope': src/agent/graph.py has no attribute " \
           "'nope'." in revision["status_message"], revision["status_message"]
    for internal in INTERNALS:
        assert internal not in revision["status_message"]


def test_only_the_projects_frames_are_in_the_traceback(api_client, internal_deployment, tmp_path, run_jobs):
    url, _ = nested_failure(api_client, internal_deployment, tmp_path, run_jobs, IMPORT_ERROR)
    build_log = api_client.get(f"{url}/logs", {"type": "build", "level": "ERROR"}).json()["logs"]
    frames = [line["message"] for line in build_log if line["message"].startswith("  File ")]
    assert frames == [f'  File "src/agent/graph.py", line {line_of(IMPORT_ERROR, "require_key()")}, in <module>',
                      f'  File "src/agent/graph.py", line {line_of(IMPORT_ERROR, "raise RuntimeError")}, '
                      "in require_key"], build_log


def test_a_graph_that_fails_only_when_served_is_told_in_the_deploy_log_without_internals(
        api_client, internal_deployment, tmp_path, run_jobs):
    url, revision = nested_failure(api_client, internal_deployment, tmp_path, run_jobs, SERVE_ERROR)
    assert revision["status"] == "DEPLOY_FAILED", revision
    deploy_log = "\n".join(line["message"] for line in api_client.get(
        f"{url}/logs", {"type": "deploy", "limit": 1000}).json()["logs"])
    line = line_of(SERVE_ERROR, "raise RuntimeError")
    assert f"Graph 'agent' failed to load: src/agent/graph.py, line {line}: RuntimeError: no model key configured" \
        in deploy_log, deploy_log
    for internal in INTERNALS:
        assert internal not in deploy_log, internal

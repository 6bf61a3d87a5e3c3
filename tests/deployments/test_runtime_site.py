"""What a revision's environment sees of the service's packages: the runtime (requirements.txt and what it needs)."""

from __future__ import annotations

import re
from pathlib import Path

from deployments import build, runtime_site

DOCS = Path(__file__).resolve().parents[2] / "docs" / "deployments.md"


def test_the_runtime_holds_the_service_requirements_and_their_needs_but_no_test_tool():
    pins = runtime_site.runtime_pins()
    assert {"django", "langgraph", "deepagents", "langchain-core", "psycopg", "psycopg-binary"} <= pins.keys()
    assert not {"pytest", "iniconfig", "moto", "playwright", "starlette", "python-dotenv"} & pins.keys()


def test_the_site_links_the_runtime_files_and_is_built_once_per_set_of_versions(settings, tmp_path):
    settings.DEPLOY_ROOT = tmp_path
    site = runtime_site.ensure_site()
    assert site.parent == tmp_path / "runtime" and site.name == runtime_site.fingerprint()
    assert (site / "langgraph").resolve().is_dir() and (site / "django" / "__init__.py").exists()
    assert not (site / "pytest").exists() and not (site / "_pytest").exists()
    assert runtime_site.ensure_site() == site
    assert [p.name for p in (tmp_path / "runtime").iterdir()] == [site.name]  # no scratch left behind


def test_the_suggested_range_admits_the_runtime_version_and_its_patch_releases():
    assert build.supported_range("1.2.22") == ">=1.2.22,<1.3"
    assert build.supported_range("2026.10.1") == ">=2026.10.1,<2026.11"
    assert build.supported_range("7") == "==7"


def test_a_conflict_pip_reports_for_a_dependency_of_a_dependency_is_told_in_one_line():
    pip_lines = ["ERROR: Cannot install oldlib==1.0 because these package versions have conflicting dependencies.",
                 "The conflict is caused by:", "    The user requested (constraint) langgraph==1.2.22",
                 "    oldlib 1.0 depends on langgraph<1.0; python_version >= \"3.9\""]
    assert build.transitive_conflict(pip_lines, {"langgraph": "1.2.22"}) == (
        "oldlib 1.0 needs langgraph<1.0, but the runtime runs langgraph 1.2.22: choose a version of oldlib that "
        "accepts langgraph 1.2.22.")
    assert build.transitive_conflict(["    other 2.0 depends on six>=1"], {"langgraph": "1.2.22"}) is None


def test_the_documented_versions_are_the_runtime_versions():
    section = DOCS.read_text().split("## Supported versions of the runtime's packages", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| ([^ |]+) \| `([^`]+)` \|$", section, re.MULTILINE)
    assert len(rows) >= 8
    pins = runtime_site.runtime_pins()
    for name, version, wanted in rows:
        assert (version, wanted) == (pins[name], f"{name}{build.supported_range(pins[name])}"), name

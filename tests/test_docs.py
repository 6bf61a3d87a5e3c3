"""The docs stay true to the repository: docs/configuration.md names every environment variable the code reads, and
every relative link of the README and docs/ reaches a file (and a heading) that exists.

The variables are found in the code itself: every call of an environment-reading helper (`env_str`, `env_int`, …,
`os.environ.get`, `os.getenv`, `os.environ.setdefault`) or `os.environ[...]` with a literal name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support_processes import BASE_DIR

CONFIGURATION = BASE_DIR / "docs" / "configuration.md"
VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*$")
APPS = ("accounts", "agentauth", "agentserver", "chat", "config", "core", "deployments", "exports", "tracing")


def variables_read(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and "env" in ast.unparse(node.func).lower() and node.args:
            candidate = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            candidate = node.slice
        else:
            continue
        if isinstance(candidate, ast.Constant) and isinstance(candidate.value, str) and VARIABLE.match(candidate.value):
            names.add(candidate.value)
    return names


def settings_files() -> list[Path]:
    """config/settings.py and every other settings module of the code base (the serving process's, and a module of
    settings both share, wherever they live)."""
    found = {path for app in APPS for path in (BASE_DIR / app).rglob("*settings*.py") if "migrations" not in path.parts}
    return sorted(found | {BASE_DIR / "config" / "settings.py"})


def undocumented(names: set[str]) -> list[str]:
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]*)`", CONFIGURATION.read_text()))
    return sorted(names - documented)


def test_every_variable_the_settings_read_is_in_docs_configuration():
    names = set().union(*(variables_read(path) for path in settings_files()))
    # A reader that recognises nothing would pass vacuously: today's settings read about 90 variables.
    assert len(names) >= 80, f"found only {sorted(names)}: has the way settings read the environment changed?"
    assert undocumented(names) == [], "add these to docs/configuration.md with their default and meaning"


def test_every_variable_the_apps_read_directly_is_in_docs_configuration():
    names = set()
    for app in APPS:
        for path in (BASE_DIR / app).rglob("*.py"):
            if "migrations" not in path.parts:
                names |= variables_read(path)
    assert {"CHAT_MODEL", "DJANGO_SETTINGS_MODULE"} <= names
    assert undocumented(names) == [], "add these to docs/configuration.md with their default and meaning"


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, number = slug, 0
        while anchor in anchors:
            number += 1
            anchor = f"{slug}-{number}"
        anchors.add(anchor)
    return anchors


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [BASE_DIR / "README.md", *sorted((BASE_DIR / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in heading_anchors(path.read_text()):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []

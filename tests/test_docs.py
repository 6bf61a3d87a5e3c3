"""The docs stay true to the repository: docs/configuration.md names every environment variable the code reads,
every relative link of the README and docs/ reaches a file (and a heading) that exists, and every table row renders
inside its table.

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


def doc_pages() -> list[Path]:
    return [BASE_DIR / "README.md", *sorted((BASE_DIR / "docs").glob("*.md"))]


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = doc_pages()
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in heading_anchors(path.read_text()):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


TABLE_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")


def table_cells(line: str) -> list[str]:
    """A row's cells as GitHub splits them: on every `|` not escaped as `\\|`, code spans included."""
    row = line.strip().removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return re.split(r"(?<!\\)\|", row)


def table_blocks(markdown: str) -> list[tuple[int, list[str]]]:
    """Runs of consecutive lines that start with `|` (after any indent), outside fenced code, with the line number of
    each run's first."""
    blocks: list[tuple[int, list[str]]] = []
    fenced, previous_was_row = False, False
    for number, line in enumerate(markdown.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        # Indented rows too: a table inside a list item (docs/deployments.md has some).
        is_row = not fenced and line.lstrip().startswith("|")
        if is_row and previous_was_row:
            blocks[-1][1].append(line)
        elif is_row:
            blocks.append((number, [line]))
        previous_was_row = is_row
    return blocks


def table_problems(markdown: str) -> list[str]:
    """Rows GitHub would not render as cells of a table: a run without a header and `|---|` delimiter line (such as a
    row cut off from its table by a blank line), or a row whose cell count differs from its header's."""
    problems = []
    for first, rows in table_blocks(markdown):
        if len(rows) < 2 or not TABLE_DELIMITER.match(rows[1].strip()):
            problems.append(f"line {first}: a row with no header and |---| line above it: {rows[0][:60]}")
            continue
        width = len(table_cells(rows[0]))
        for offset, row in enumerate(rows[1:], start=1):
            if len(table_cells(row)) != width:
                problems.append(f"line {first + offset}: {len(table_cells(row))} cells, the header has {width}: "
                                f"{row[:60]}")
    return problems


def test_the_table_check_flags_a_row_cut_off_from_its_table_and_a_row_with_a_cell_too_many():
    table = "| Name | Meaning |\n|---|---|\n| `A` | one `a \\| b` |\n"
    assert table_problems(table) == []
    assert table_problems(table + "\n| `B` | two |\n") == ["line 5: a row with no header and |---| line above it: "
                                                              "| `B` | two |"]
    assert table_problems(table + "| `C` | `c | d` |\n") == ["line 4: 3 cells, the header has 2: | `C` | `c | d` |"]
    assert table_problems("```\n| not | a table |\n```\n") == []
    assert table_problems("- a list item:\n\n  | A | B |\n  |---|---|\n  | 1 |\n") == [
        "line 5: 1 cells, the header has 2:   | 1 |"]


def test_every_table_row_of_the_readme_and_docs_belongs_to_a_table():
    problems = [f"{page.name} {problem}" for page in doc_pages() for problem in table_problems(page.read_text())]
    assert problems == []

"""The admin index answers "is anything wrong?": a calm line when nothing is, else counts that link to the lists
filtered by the same selectors; the site says what it is."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.support_pages import VIEWPORT_PARAMS, fits_sideways  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]
EXPECTED = {
    "1 failing export": "/admin/bulk_exports/bulkexport/?health=failing",
    "1 failed revision": "/admin/deployments/revision/?health=failed",
    "1 destination failing validation": "/admin/exports/destination/?health=failing",
    "1 export run stuck past its lease": "/admin/bulk_exports/bulkexportrun/?health=stuck",
    "1 chat run stuck (no heartbeat)": "/admin/agentruntime/chatrun/?health=stuck",
}


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_the_index_is_calm_when_all_is_well_and_counts_each_problem_with_a_link(
        size, viewport, base, s3, admin_page, shoot):
    page = admin_page(viewport)
    expect(page).to_have_title("Overview | Agent operations admin")
    expect(page.locator("#site-name")).to_have_text("Agent operations admin")
    expect(page.locator(".attention .calm")).to_contain_text("Nothing needs attention")
    expect(page.locator("body")).not_to_contain_text("Django administration")
    shoot(page, f"index-calm-{size}")

    ws = scene.workspace()
    healthy = scene.destination(s3, ws, name="Healthy archive")
    project = scene.project(ws, days=2)
    scene.failed_export(ws, healthy, project)
    scene.stuck_export_run(ws, healthy, project)
    scene.deployment(ws)
    scene.chat_runs()
    assert "Access denied" in scene.failing_destination(s3, ws).validation_error

    page.reload()
    problems = page.locator(".attention li.problem")
    expect(problems).to_have_count(len(EXPECTED))
    shoot(page, f"index-problems-{size}")
    assert fits_sideways(page)
    for text, url in EXPECTED.items():
        link = problems.filter(has_text=text).get_by_role("link")
        expect(link).to_have_attribute("href", url)
    for url in EXPECTED.values():
        page.goto(base + url)
        expect(page.locator("#result_list tbody tr")).to_have_count(1)
    assert page.problems == []

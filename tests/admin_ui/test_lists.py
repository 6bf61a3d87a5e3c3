"""Every admin list at 1440 px: no horizontal scroll, the table inside its box; short ids and relative dates
with the whole value on hover; deleted destinations hidden until a filter asks; honest revision status."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from django.contrib import admin  # noqa: E402
from django.utils import timezone  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

from exports.destinations import services  # noqa: E402
from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.conftest import PHONE  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]

FIT = """() => {
  const box = document.querySelector('#changelist .results');
  const table = document.querySelector('#result_list');
  return {page: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth,
          box: box ? box.clientWidth : null, boxContent: box ? box.scrollWidth : null,
          table: table ? Math.ceil(table.getBoundingClientRect().width) : null,
          rows: document.querySelectorAll("#result_list tbody tr").length};
}"""


def changelists() -> list[str]:
    return sorted(f"/admin/{model._meta.app_label}/{model._meta.model_name}/" for model in admin.site._registry)


@pytest.fixture
def populated(base, s3):
    """Something in every list, with long names where names can be long."""
    ws = scene.workspace()
    dest = scene.destination(s3, ws)
    old = scene.destination(s3, ws, name="Old archive (replaced)", user="old")
    services.destination_delete(destination=old)
    project = scene.project(ws)
    scene.failed_export(ws, dest, project)
    scene.export(ws, dest, project, days=1)
    scene.stuck_export_run(ws, dest, project)
    scene.chat_runs()
    scene.store_items()
    scene.deployment(ws)
    scene.api_key(ws)
    return {"workspace": ws, "destination": dest, "deleted": old}


def test_no_admin_list_scrolls_sideways_at_1440_px_and_each_fits_a_phone(populated, base, admin_page, shoot):
    desktop, phone = admin_page(), admin_page(PHONE)
    for url in changelists():
        name = url.strip("/").replace("/", "-")
        desktop.goto(base + url)
        expect(desktop.locator("#changelist")).to_be_visible()
        shoot(desktop, f"list-{name}-1440")
        fit = desktop.evaluate(FIT)
        assert fit["page"] <= fit["viewport"], (url, fit)
        assert fit["box"] is None or fit["boxContent"] <= fit["box"], (url, fit)
        phone.goto(base + url)
        expect(phone.locator("#changelist")).to_be_visible()
        shoot(phone, f"list-{name}-375")
    assert desktop.problems == [] and phone.problems == []


def test_lists_show_short_ids_relative_dates_and_hide_deleted_destinations(populated, base, admin_page, shoot):
    page = admin_page()
    page.goto(f"{base}/admin/bulk_exports/bulkexport/")
    export_id = page.locator("#result_list .short-id").first
    full = export_id.get_attribute("title")
    assert len(full) == 36 and export_id.inner_text() == full[:8] + "…"
    copy = page.locator("#result_list button.copy-id").first
    copy.click()
    expect(copy).to_have_class("copy-id copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == full
    created = page.locator("#result_list td.field-created time").first
    assert created.inner_text() in ("just now",) or created.inner_text().endswith("ago")
    assert str(timezone.now().year) in created.get_attribute("title")

    page.goto(f"{base}/admin/exports/destination/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(scene.LONG_NAME)
    page.get_by_role("link", name="Deleted only").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Old archive (replaced)")
    expect(rows.first).to_contain_text("Deleted")

    page.goto(f"{base}/admin/deployments/revision/")
    statuses = page.locator("#result_list td.field-honest_status").all_inner_texts()
    assert sorted(statuses) == ["BUILD_FAILED", "Replaced", "Serving"]
    dark = admin_page(color_scheme="dark")
    dark.goto(f"{base}/admin/deployments/revision/")
    shoot(dark, "list-revisions-dark-1440")
    page.goto(f"{base}/admin/deployments/deployment/?health=failed")
    link = page.locator("#result_list td.field-open_link a")
    assert link.get_attribute("href") == f"{base}/deployments/{populated['workspace'].deployments.get().id}"

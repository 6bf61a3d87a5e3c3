"""An export's and an export run's own pages: Cancel (after a confirmation) and Retry failed export runs, through the
services; outcomes checked in the database and in the bucket (moto), at 1440 and 375 px."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from exports.bulk_exports.models import BulkExport, BulkExportRun  # noqa: E402
from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.support_pages import VIEWPORT_PARAMS, confirm, expect_message, fits_sideways, object_button  # noqa: E402
from tests.exports.support_exports import drain  # noqa: E402
from tests.exports.support_files import parquet_keys  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]


def keys_of(s3, export) -> list[str]:
    return [key for key in parquet_keys(s3) if f"export_id={export.id}/" in key]


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_retry_failed_export_runs_writes_the_files_and_the_index_stops_counting_the_export(
        size, viewport, base, s3, admin_page, shoot):
    ws, destination = scene.workspace_with_destination(s3)
    failed = scene.failed_export(ws, destination, scene.project(ws))
    page = admin_page(viewport)
    expect(page.locator(".attention li.problem")).to_have_text("1 failing export")
    page.locator(".attention li.problem a").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.locator("#result_list a.short-id").first.click()
    expect(object_button(page, "Cancel")).to_have_count(0)  # it already ended
    shoot(page, f"export-failed-{size}")
    assert fits_sideways(page)
    assert keys_of(s3, failed) == []

    object_button(page, "Retry failed export runs").click()
    expect_message(page, "2 export runs queued again.")
    assert set(failed.export_runs.values_list("status", flat=True)) == {"Created"}
    drain()
    assert len(keys_of(s3, failed)) == 2
    failed.refresh_from_db()
    assert failed.status == "Completed"
    page.reload()
    expect(page.locator("ul.object-tools")).not_to_contain_text("Retry failed export runs")
    page.goto(f"{base}/admin/")
    expect(page.locator(".attention .calm")).to_contain_text("Nothing needs attention")
    assert page.problems == []


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_cancel_on_an_export_and_on_an_export_run_asks_first_and_cancels_through_the_service(
        size, viewport, base, s3, admin_page, shoot):
    ws, destination = scene.workspace_with_destination(s3)
    project = scene.project(ws)
    waiting = scene.export(ws, destination, project)
    other = scene.export(ws, destination, project)
    page = admin_page(viewport)

    page.goto(f"{base}/admin/bulk_exports/bulkexport/{waiting.id}/change/")
    shoot(page, f"export-running-{size}")
    object_button(page, "Cancel").click()
    expect(page.locator(".confirm-what")).to_contain_text("Cancel this export?")
    shoot(page, f"export-cancel-confirm-{size}")
    confirm(page, "Cancel")
    expect_message(page, "cancelled (running export runs stop at their next batch)")
    waiting.refresh_from_db()
    assert waiting.status == "Cancelled"
    assert set(waiting.export_runs.values_list("status", flat=True)) == {"Cancelled"}

    export_run = other.export_runs.order_by("start_time").first()
    page.goto(f"{base}/admin/bulk_exports/bulkexportrun/{export_run.id}/change/")
    shoot(page, f"export-run-{size}")
    assert fits_sideways(page)
    object_button(page, "Cancel").click()
    expect(page.locator(".confirm-what")).to_contain_text(f"this cancels export {other.id}")
    shoot(page, f"export-run-cancel-confirm-{size}")
    page.get_by_role("link", name="No, take me back").click()
    assert BulkExport.objects.get(id=other.id).status == "Created"
    object_button(page, "Cancel").click()
    confirm(page, "Cancel")
    expect_message(page, "cancelled")
    assert BulkExport.objects.get(id=other.id).status == "Cancelled"
    assert BulkExportRun.objects.get(id=export_run.id).status == "Cancelled"
    expect(page.locator("ul.object-tools")).not_to_contain_text("Cancel")
    drain()
    assert keys_of(s3, waiting) == [] and keys_of(s3, other) == []
    assert page.problems == []

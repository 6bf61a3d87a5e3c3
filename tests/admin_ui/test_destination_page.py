"""A destination's own page: Validate now, Rotate credentials (its own form) and Delete, each through the service,
checked in the database and on the S3 server (moto), at 1440 and 375 px."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from exports.bulk_exports import services as export_services  # noqa: E402
from exports.destinations.models import CredentialVersion, Destination  # noqa: E402
from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.support_pages import VIEWPORT_PARAMS, confirm, expect_message, fits_sideways, object_button  # noqa: E402
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS, object_keys  # noqa: E402
from tests.support_s3 import allow  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]
PUT_ONLY = ["s3:PutObject"]


def empty_and_delete_bucket(s3) -> None:
    client = s3.client()
    for key in object_keys(s3):
        client.delete_object(Bucket=BUCKET, Key=key)
    client.delete_bucket(Bucket=BUCKET)


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_validate_now_writes_to_the_bucket_and_a_failure_is_reported_and_counted(
        size, viewport, base, s3, admin_page, shoot):
    ws = scene.workspace()
    # Allowed to put but not to delete: each test write stays in the bucket, so S3 shows that it happened.
    destination = scene.destination(s3, ws, actions=PUT_ONLY)
    page = admin_page(viewport)
    change = f"{base}/admin/exports/destination/{destination.id}/change/"
    page.goto(change)
    shoot(page, f"destination-change-{size}")
    assert fits_sideways(page)
    written = len(object_keys(s3))

    s3.set_auth_enforced(True)
    object_button(page, "Validate now").click()
    expect_message(page, "the test write succeeded (the test file was left in place")
    s3.set_auth_enforced(False)
    assert len(object_keys(s3)) == written + 1
    destination.refresh_from_db()
    assert destination.validation_failed_at is None and destination.last_validated_at is not None

    empty_and_delete_bucket(s3)
    object_button(page, "Validate now").click()
    expect_message(page, "Validate now failed: Failed to validate S3 destination: Bucket is not valid", "error")
    shoot(page, f"destination-validate-failed-{size}")
    destination.refresh_from_db()
    assert destination.validation_failed_at is not None and "Bucket is not valid" in destination.validation_error

    page.goto(f"{base}/admin/")
    problem = page.locator(".attention li.problem")
    expect(problem).to_have_text("1 destination failing validation")
    problem.get_by_role("link").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list")).to_contain_text("Failing")
    s3.create_bucket(BUCKET)
    assert page.problems == []


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_rotating_credentials_is_its_own_form_that_test_writes_first(size, viewport, base, s3, admin_page, shoot):
    ws, destination = scene.workspace_with_destination(s3)
    reader = s3.create_user("reader", [allow(["s3:GetObject"], BUCKET)])
    successor = s3.create_user("successor", [allow(WRITE_ACTIONS, BUCKET)])
    page = admin_page(viewport)
    page.goto(f"{base}/admin/exports/destination/add/")
    for label in ("Access key ID", "Secret access key", "Session token (optional)"):
        expect(page.get_by_label(label)).to_have_attribute("type", "password")
    shoot(page, f"destination-add-{size}")
    page.goto(f"{base}/admin/exports/destination/{destination.id}/change/")
    object_button(page, "Rotate credentials").click()
    expect(page.locator(".rotation-explained")).to_contain_text("test write")
    expect(page.locator(".rotation-explained")).to_contain_text("runs already in flight keep the credentials")
    shoot(page, f"destination-rotate-{size}")
    assert fits_sideways(page)

    page.get_by_role("button", name="Test and rotate").click()
    expect(page.locator(".errorlist")).to_have_count(2)
    expect(page.locator(".form-row.errors").first).to_contain_text("This field is required.")

    s3.set_auth_enforced(True)
    page.get_by_label("Access key ID").fill(reader.access_key_id)
    page.get_by_label("Secret access key").fill(reader.secret_access_key)
    page.get_by_role("button", name="Test and rotate").click()
    expect(page.locator(".errornote")).to_contain_text("Failed to validate S3 destination: Access denied")
    shoot(page, f"destination-rotate-refused-{size}")
    assert reader.secret_access_key not in page.content()
    assert CredentialVersion.objects.filter(destination=destination).count() == 1

    page.get_by_label("Access key ID").fill(successor.access_key_id)
    page.get_by_label("Secret access key").fill(successor.secret_access_key)
    page.get_by_role("button", name="Test and rotate").click()
    expect_message(page, "rotated to revision 2: new export runs use them; export runs in flight keep revision 1")
    s3.set_auth_enforced(False)
    destination.refresh_from_db()
    versions = list(CredentialVersion.objects.filter(destination=destination).order_by("number"))
    assert destination.credentials_revision == 2 and destination.current_credentials_id == versions[1].id
    assert versions[0].retired_at is not None and versions[1].credentials_keys == ["access_key_id",
                                                                                   "secret_access_key"]
    assert successor.secret_access_key not in page.content()

    page.get_by_role("button", name="Save", exact=True).click()
    expect_message(page, "Nothing was changed", "info")
    expect(page.locator("ul.messagelist")).not_to_contain_text("changed successfully")
    destination.refresh_from_db()
    assert destination.credentials_revision == 2
    assert page.problems == []


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_delete_asks_first_refuses_while_an_export_runs_and_then_hides_the_destination(
        size, viewport, base, s3, admin_page, shoot):
    ws, destination = scene.workspace_with_destination(s3)
    busy = scene.export(ws, destination, scene.project(ws, days=1), days=1)
    page = admin_page(viewport)
    page.goto(f"{base}/admin/exports/destination/{destination.id}/change/")
    object_button(page, "Delete").click()
    expect(page.locator(".confirm-what")).to_contain_text("Delete the destination")
    shoot(page, f"destination-delete-confirm-{size}")
    confirm(page, "Delete")
    expect_message(page, "Delete failed: This destination is used by an export that has not finished", "error")
    assert Destination.objects.get(id=destination.id).deleted_at is None

    export_services.export_cancel(export=busy)
    object_button(page, "Delete").click()
    confirm(page, "Delete")
    expect_message(page, f"{destination.display_name}: deleted.")
    expect(page).to_have_url(f"{base}/admin/exports/destination/")
    expect(page.locator("#result_list tbody tr")).to_have_count(0)
    assert Destination.objects.get(id=destination.id).deleted_at is not None
    assert page.problems == []

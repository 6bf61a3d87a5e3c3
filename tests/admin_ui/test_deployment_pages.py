"""A deployment's and a revision's own pages: Open, Redeploy, Delete (after a confirmation) and Logs, through the
services and checked in the database; a replaced revision says so; the status link `langgraph deploy` prints logs in
and opens the deployment; at 1440 and 375 px."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from core.models import Job  # noqa: E402
from deployments.models import Deployment  # noqa: E402
from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.conftest import PASSWORD  # noqa: E402
from tests.admin_ui.support_pages import VIEWPORT_PARAMS, confirm, expect_message, fits_sideways, object_button  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_redeploy_and_delete_go_through_the_pipeline_and_the_url_opens(size, viewport, base, admin_page, shoot):
    deployment = scene.deployment(scene.workspace())
    page = admin_page(viewport)
    expect(page.locator(".attention li.problem")).to_have_text("1 failed revision")
    page.goto(f"{base}/admin/deployments/deployment/{deployment.id}/change/")
    url = f"{base}/deployments/{deployment.id}"
    expect(object_button(page, "Open")).to_have_attribute("href", url)
    expect(page.locator(".field-url a")).to_have_attribute("href", url)
    inline = page.locator(".inline-group")
    for text in ("Serving", "Replaced", "BUILD_FAILED"):
        expect(inline).to_contain_text(text)
    expect(inline).not_to_contain_text("DEPLOYED")
    shoot(page, f"deployment-{size}")
    assert fits_sideways(page)

    object_button(page, "Redeploy").click()
    expect_message(page, "redeploy of revision #2 queued as revision #4.")
    deployment.refresh_from_db()
    latest = deployment.latest_revision
    assert latest.number == 4 and latest.status == "QUEUED" and latest.repo_ref == "main"
    assert deployment.active_revision.number == 2
    assert Job.objects.filter(kind="deployments.build", payload__revision_id=str(latest.id)).exists()
    shoot(page, f"deployment-redeployed-{size}")

    object_button(page, "Delete").click()
    expect(page.locator(".confirm-what")).to_contain_text(f"Delete the deployment “{deployment.name}”?")
    shoot(page, f"deployment-delete-confirm-{size}")
    confirm(page, "Delete")
    expect_message(page, "deletion queued")
    deployment.refresh_from_db()
    assert deployment.status == Deployment.Status.AWAITING_DELETE
    assert deployment.revisions.get(number=4).status == "SKIPPED"
    assert Job.objects.filter(kind="deployments.teardown", payload__deployment_id=str(deployment.id)).exists()
    expect(page.locator("ul.object-tools")).not_to_contain_text("Redeploy")
    assert page.problems == []


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_a_revisions_logs_button_shows_its_build_and_deploy_logs(size, viewport, base, admin_page, shoot):
    deployment = scene.deployment(scene.workspace())
    failed, replaced = deployment.revisions.get(number=3), deployment.revisions.get(number=1)
    page = admin_page(viewport)
    page.goto(f"{base}/admin/deployments/revision/?health=failed")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.get_by_role("link", name=f"{deployment.name} #3").click()
    shoot(page, f"revision-failed-{size}")
    object_button(page, "Logs").click()
    expect(page.locator("pre.log")).to_contain_text("BUILD_FAILED: pip install failed")
    expect(page.locator("pre.log .log-error")).to_have_count(1)
    shoot(page, f"revision-logs-{size}")
    assert fits_sideways(page)
    page.get_by_role("link", name="Deploy log").click()
    expect(page.get_by_text("No deploy log lines yet.")).to_be_visible()
    assert failed.logs.count() == 4

    page.goto(f"{base}/admin/deployments/revision/{replaced.id}/change/")
    expect(page.locator(".field-honest_status")).to_contain_text("Replaced")
    expect(page.locator(".field-whole_message")).to_contain_text("a newer revision replaced it")
    expect(page.locator(".field-honest_status")).not_to_contain_text("DEPLOYED")  # (its log still tells history)
    shoot(page, f"revision-replaced-{size}")
    assert page.problems == []


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_the_status_link_langgraph_deploy_prints_logs_in_and_opens_the_deployment(size, viewport, base, browser,
                                                                                   shoot):
    deployment = scene.deployment(scene.workspace())
    context = browser.new_context(viewport=viewport)  # a browser that is not logged in yet, as after a deploy
    try:
        page = context.new_page()
        page.goto(f"{base}/o/{deployment.workspace_id}/host/deployments/{deployment.id}")
        expect(page.get_by_role("button", name="Log in")).to_be_visible()
        shoot(page, f"status-link-login-{size}")
        page.get_by_label("Username").fill("root")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/admin/deployments/deployment/{deployment.id}/change/")
        expect(page.get_by_role("heading", name=deployment.name)).to_be_visible()
        expect(page.locator(".inline-group")).to_contain_text("BUILD_FAILED")
        shoot(page, f"status-link-deployment-{size}")
        assert fits_sideways(page)
    finally:
        context.close()


GRAPH_FAILURE = "Graph 'agent' failed to load: src/agent/graph.py, line 19: SyntaxError: expected ':'"


@pytest.mark.parametrize(("size", "viewport"), VIEWPORT_PARAMS)
def test_a_failed_revision_shows_its_whole_reason_and_its_log_box_opens_at_the_end(size, viewport, base, admin_page,
                                                                                   shoot):
    from deployments import services
    from deployments.models import RevisionLog

    deployment = scene.deployment(scene.workspace())
    failed = deployment.revisions.get(number=3)
    services.log_append(revision=failed, type=RevisionLog.Type.BUILD,
                        lines=[f"Requirement already satisfied: package-{n}" for n in range(80)])
    services.log_append(revision=failed, type=RevisionLog.Type.BUILD, level="ERROR",
                        lines=[f"BUILD_FAILED: {GRAPH_FAILURE}"])
    failed.status_message = GRAPH_FAILURE
    failed.save(update_fields=["status_message"])
    page = admin_page(viewport)

    page.goto(f"{base}/admin/deployments/deployment/{deployment.id}/change/")
    expect(page.locator(".inline-group .field-message").first).to_have_text(GRAPH_FAILURE)
    page.goto(f"{base}/admin/deployments/revision/?health=failed")
    expect(page.locator("#result_list .field-message")).to_have_text(GRAPH_FAILURE)
    page.goto(f"{base}/admin/deployments/revision/{failed.id}/change/")
    expect(page.locator(".field-whole_message")).to_contain_text(GRAPH_FAILURE)
    build_log = page.locator(".field-build_log pre.log")
    expect(build_log).to_contain_text(GRAPH_FAILURE)
    assert at_the_end(build_log), "the build log box should open scrolled to its last line"
    shoot(page, f"revision-failed-whole-{size}")
    assert fits_sideways(page)

    object_button(page, "Logs").click()
    assert at_the_end(page.locator("pre.log"))
    shoot(page, f"revision-logs-at-end-{size}")
    assert page.problems == []


def at_the_end(box) -> bool:
    """Whether a scrolling box shows its last line (and does scroll: it holds more than it shows)."""
    return box.evaluate("b => b.scrollHeight > b.clientHeight && b.scrollTop + b.clientHeight >= b.scrollHeight - 2")

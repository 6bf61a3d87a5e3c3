"""The admin site: its "needs attention" selectors, its branding, and the rules of the buttons on object pages."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone

from agentruntime.models import ChatRun, ChatThread
from agentruntime.selectors import run_list_stale
from core.models import Job
from deployments.models import Deployment, Revision
from deployments.selectors import revision_list_failed
from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.bulk_exports.selectors import FAILING_EXPORT_DAYS, export_list_failing, export_run_list_stuck
from exports.destinations.models import Destination
from tracing.models import TracingProject

pytestmark = pytest.mark.django_db


@pytest.fixture
def export_of(workspace):
    destination = Destination.objects.create(workspace=workspace, display_name="d", config={"bucket_name": "b"})
    project = TracingProject.objects.create(workspace=workspace, name="p")

    def make(status="Created", finished_at=None, runs=()):
        now = timezone.now()
        export = BulkExport.objects.create(workspace=workspace, destination=destination, session=project,
                                           start_time=now - timedelta(days=1), end_time=now, status=status,
                                           finished_at=finished_at)
        for run_status in runs:
            BulkExportRun.objects.create(bulk_export=export, start_time=export.start_time, end_time=now,
                                         status=run_status)
        return export

    return make


def test_failing_exports_are_recent_failures_and_unfinished_ones_with_a_failed_export_run(export_of):
    now = timezone.now()
    recent = export_of("Failed", now - timedelta(hours=1))
    timed_out = export_of("TimedOut", now - timedelta(days=1))
    export_of("Failed", now - timedelta(days=FAILING_EXPORT_DAYS + 1))  # old news
    going_badly = export_of("Running", runs=["Failed", "Running"])
    export_of("Running", runs=["Completed", "Running"])
    export_of("Completed", now)
    assert set(export_list_failing()) == {recent, timed_out, going_badly}


def test_stuck_export_runs_are_unfinished_ones_whose_job_is_gone_ended_or_past_its_lease(export_of):
    now = timezone.now()
    export = export_of("Running", runs=["Running"] * 5 + ["Created"])
    runs = list(export.export_runs.all())
    expired = Job.objects.create(kind="exports.run", status="running", lease_expires_at=now - timedelta(minutes=1))
    leased = Job.objects.create(kind="exports.run", status="running", lease_expires_at=now + timedelta(minutes=10))
    queued = Job.objects.create(kind="exports.run", status="queued")
    failed = Job.objects.create(kind="exports.run", status="failed")
    for run, job_id in zip(runs, [expired.id, leased.id, queued.id, failed.id, uuid.uuid4(), None], strict=True):
        BulkExportRun.objects.filter(id=run.id).update(job_id=job_id)
    assert set(export_run_list_stuck().values_list("id", flat=True)) == {runs[0].id, runs[3].id, runs[4].id}


def test_a_failed_revision_counts_only_while_it_is_the_latest(workspace):
    deployment = Deployment.objects.create(workspace=workspace, name="a", source="github")
    failed = Revision.objects.create(deployment=deployment, number=1, status="BUILD_FAILED", source="github")
    Deployment.objects.filter(id=deployment.id).update(latest_revision=failed)
    assert list(revision_list_failed()) == [failed]
    newer = Revision.objects.create(deployment=deployment, number=2, status="QUEUED", source="github")
    Deployment.objects.filter(id=deployment.id).update(latest_revision=newer)
    assert list(revision_list_failed()) == []


def test_a_chat_run_is_stuck_once_its_heartbeat_is_older_than_the_stale_limit(settings):
    now = timezone.now()
    settings.CHAT_RUN_STALE_SECONDS = 30
    thread = ChatThread.objects.create(id="t", owner_kind="anonymous")
    stale = ChatRun.objects.create(id=uuid.uuid4(), thread=thread, heartbeat_at=now - timedelta(seconds=31))
    ChatRun.objects.create(id=uuid.uuid4(), thread=ChatThread.objects.create(id="u", owner_kind="anonymous"))
    ChatRun.objects.create(id=uuid.uuid4(), thread=thread, status="failed", heartbeat_at=now - timedelta(hours=1))
    assert list(run_list_stale()) == [stale]


def test_the_site_says_what_it_is(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Agent operations admin" in page and "Django administration" not in page
    assert "Nothing needs attention" in page


def test_buttons_need_the_models_change_permission_and_a_post(client, admin_client, workspace):
    deployment = Deployment.objects.create(workspace=workspace, name="a", source="github")
    revision = Revision.objects.create(deployment=deployment, number=1, status="DEPLOYED", source="github")
    Deployment.objects.filter(id=deployment.id).update(latest_revision=revision, active_revision=revision)
    url = f"/admin/deployments/deployment/{deployment.id}/do/delete/"
    assert admin_client.get(url).status_code == 200  # the confirmation page
    assert admin_client.get(f"/admin/deployments/deployment/{deployment.id}/do/redeploy/").status_code == 405
    unknown = admin_client.post(f"/admin/deployments/deployment/{deployment.id}/do/explode/", follow=True)
    assert "is not available" in unknown.content.decode()

    viewer = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_deployment"))
    client.force_login(viewer)
    page = client.get(f"/admin/deployments/deployment/{deployment.id}/change/").content.decode()
    assert "Open ↗" in page and ">Redeploy<" not in page and ">Delete<" not in page
    assert client.post(url).status_code == 403
    assert Deployment.objects.get(id=deployment.id).status != Deployment.Status.AWAITING_DELETE

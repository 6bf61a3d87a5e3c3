"""The bulk exports admin (status, progress, cancel, retry), the sweeper, and what destinations learn from exports."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.models import Job
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.destinations import services
from exports.destinations.models import CredentialVersion, Destination
from tests.exports.support_exports import EXPORTS_URL, create_export, drain, seed_trace_runs

pytestmark = pytest.mark.usefixtures("egress_loopback")
EXPORTS_ADMIN = "/admin/bulk_exports/bulkexport/"
RUNS_ADMIN = "/admin/bulk_exports/bulkexportrun/"


def test_the_admin_lists_exports_and_export_runs_with_their_progress(admin_client, api_client, workspace, project,
                                                              destination):
    seed_trace_runs(workspace, project, days=2, per_day=3)
    export = create_export(api_client, destination, project, days=2)
    drain()
    page = admin_client.get(EXPORTS_ADMIN).content.decode()
    assert export["id"] in page and "Completed" in page and "My exports" in page and "admin" in page
    detail = admin_client.get(f"{EXPORTS_ADMIN}{export['id']}/change/").content.decode()
    assert "2026-03-02" in detail and "rows written" in detail.lower()
    runs_page = admin_client.get(RUNS_ADMIN).content.decode()
    assert runs_page.count("Completed") >= 2 and f'title="{export["id"]}"' in runs_page
    assert admin_client.get(f"{EXPORTS_ADMIN}add/").status_code == 403


def test_the_admin_cancels_exports(admin_client, api_client, project, destination):
    export = create_export(api_client, destination, project)
    response = admin_client.post(EXPORTS_ADMIN, {"action": "cancel_exports", "_selected_action": [export["id"]]},
                                 follow=True)
    assert "cancelled" in response.content.decode()
    assert BulkExport.objects.get(id=export["id"]).status == "Cancelled"


def test_the_admin_retries_failed_export_runs_which_resume_from_their_cursor(
        admin_client, api_client, workspace, project, destination):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    export = create_export(api_client, destination, project, days=1)
    Destination.objects.filter(id=destination["id"]).update(deleted_at=timezone.now())
    drain()
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])
    assert run.status == "Failed"
    Destination.objects.filter(id=destination["id"]).update(deleted_at=None)
    response = admin_client.post(RUNS_ADMIN, {"action": "retry_export_runs", "_selected_action": [str(run.id)]},
                                 follow=True)
    assert "1 export run queued again" in response.content.decode()
    drain()
    run.refresh_from_db()
    assert run.status == "Completed" and run.rows_written == 3 and run.errors is None
    assert api_client.get(f"{EXPORTS_URL}/{export['id']}").json()["status"] == "Completed"


def test_the_sweeper_gives_an_export_run_whose_job_died_a_new_job(api_client, workspace, project, destination):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    export = create_export(api_client, destination, project, days=1)
    export_services.export_runs_dispatch()
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])
    Job.objects.filter(id=run.job_id).update(status=Job.Status.FAILED)
    assert export_services.export_runs_sweep() == 1
    assert BulkExportRun.objects.get(id=run.id).job_id != run.job_id
    drain()
    assert BulkExportRun.objects.get(id=run.id).status == "Completed"


def test_a_running_export_runs_credential_version_survives_the_purge(
        api_client, workspace, project, destination, writer):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    export = create_export(api_client, destination, project, days=1)
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])
    export_services.export_run_begin(export_run_id=run.id)  # pins version 1
    dest = Destination.objects.get(id=destination["id"])
    services.destination_credentials_update(destination=dest, credentials=writer.as_dict())
    assert services.credential_versions_purge(grace_seconds=0) == 0
    BulkExportRun.objects.filter(id=run.id).update(status="Completed")
    assert services.credential_versions_purge(grace_seconds=0) == 1
    assert CredentialVersion.objects.get(number=1).purged_at is not None


@pytest.mark.parametrize("old, new", [
    ("/admin/exports/bulkexport/?status__exact=Failed", "/admin/bulk_exports/bulkexport/?status__exact=Failed"),
    ("/admin/exports/bulkexportrun/5d7c1c0e-3f0e-4a8e-9d51-6c1f0c2b7a10/change/",
     "/admin/bulk_exports/bulkexportrun/5d7c1c0e-3f0e-4a8e-9d51-6c1f0c2b7a10/change/"),
])
def test_the_old_admin_addresses_of_bulk_exports_redirect_to_their_new_app(admin_client, old, new):
    response = admin_client.get(old)
    assert response.status_code == 301 and response["Location"] == new
    assert admin_client.get(EXPORTS_ADMIN).status_code == 200


"""POST/GET/PATCH /api/v1/bulk-exports and the runs routes: shapes, validation, filters, isolation, limits."""

from __future__ import annotations

import uuid

import pytest

from core.models import Job
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport, BulkExportRun
from tests.exports.support_destinations import BUCKET
from tests.exports.support_exports import (
    DAY1,
    EXPORTS_URL,
    Background,
    create_destination,
    create_export,
    drain,
    export_body,
    export_runs_of,
    seed_trace_runs,
)
from tests.exports.support_files import object_key, parquet_keys, read_parquet
from tracing.models import TracingProject

pytestmark = pytest.mark.usefixtures("egress_loopback")


def test_create_answers_200_with_the_export_in_the_wire_shape(api_client, workspace, project, destination):
    export = create_export(api_client, destination, project, filter='eq(is_root, true)', export_fields=["id"])
    assert set(export) == {"bulk_export_destination_id", "session_id", "start_time", "end_time", "filter", "format",
                           "format_version", "compression", "interval_hours", "export_fields", "id", "tenant_id",
                           "status", "created_at", "updated_at", "finished_at", "source_bulk_export_id"}
    assert export["tenant_id"] == str(workspace.id) and export["session_id"] == str(project.id)
    assert (export["status"], export["format"], export["format_version"], export["compression"]) == (
        "Created", "Parquet", "v1", "gzip")
    assert export["finished_at"] is None and export["source_bulk_export_id"] is None
    assert export["start_time"] == "2026-03-01T00:00:00Z" and export["end_time"] == "2026-03-04T00:00:00Z"
    assert api_client.get(f"{EXPORTS_URL}/{export['id']}").json() == export
    assert api_client.get(EXPORTS_URL).json() == [export]  # a bare array
    runs = export_runs_of(api_client, export["id"])
    assert [(r["start_time"][:10], r["status"], r["retry_number"], r["errors"]) for r in runs] == [
        ("2026-03-01", "Created", 0, None), ("2026-03-02", "Created", 0, None), ("2026-03-03", "Created", 0, None)]
    assert runs[0]["metadata"]["result"] is None and runs[0]["metadata"]["execution_backend"] is None
    assert runs[0]["metadata"]["prefix"] == object_key(export, workspace, project, DAY1, 0).rsplit("/", 1)[0]
    one = api_client.get(f"{EXPORTS_URL}/{export['id']}/runs/{runs[1]['id']}")
    assert one.status_code == 200 and one.json() == runs[1]


def test_explicit_nulls_and_the_java_sdks_format_version_alias_are_accepted(api_client, project, destination):
    export = create_export(api_client, destination, project, filter=None, compression=None, interval_hours=None,
                           export_fields=None, format=None, format_version=None, export_format_version="v2_beta")
    assert (export["format_version"], export["compression"], export["filter"]) == ("v2_beta", "gzip", None)


def test_export_runs_split_at_utc_midnights(api_client, project, destination):
    export = create_export(api_client, destination, project, start_time="2026-03-01T22:00:00+02:00",
                           end_time="2026-03-02T12:30:00Z")
    assert [(r["start_time"], r["end_time"]) for r in export_runs_of(api_client, export["id"])] == [
        ("2026-03-01T20:00:00Z", "2026-03-02T00:00:00Z"), ("2026-03-02T00:00:00Z", "2026-03-02T12:30:00Z")]


@pytest.mark.parametrize(("change", "loc"), [
    ({"end_time": None}, ["body", "end_time"]),
    ({"interval_hours": 24}, ["body", "end_time"]),
    ({"end_time": "2026-03-01T00:00:00Z"}, ["body", "end_time"]),
    ({"start_time": "2000-01-01T00:00:00Z"}, ["body", "end_time"]),
    ({"compression": "lz4"}, ["body", "compression"]),
    ({"format": "CSV"}, ["body", "format"]),
    ({"format_version": "v3"}, ["body", "format_version"]),
    ({"interval_hours": 0, "end_time": None}, ["body", "interval_hours"]),
    ({"interval_hours": 169, "end_time": None}, ["body", "interval_hours"]),
    ({"export_fields": ["id", "secret"]}, ["body", "export_fields", 1]),
    ({"export_fields": ["id", "id"]}, ["body", "export_fields"]),
    ({"export_fields": []}, ["body", "export_fields"]),
    ({"all_experiments": True}, ["body", "all_experiments"]),
    ({"session_id": "not-a-uuid"}, ["body", "session_id"]),
    ({"start_time": None}, ["body", "start_time"]),
])
def test_invalid_bodies_are_422_with_their_location(api_client, project, destination, change, loc):
    response = api_client.post(EXPORTS_URL, {**export_body(destination, project), **change}, format="json")
    assert response.status_code == 422, response.json()
    assert loc in [error["loc"] for error in response.json()["detail"]]
    assert not BulkExport.objects.exists()


@pytest.mark.parametrize("bad_filter", [
    'eq(feedback_key, "x")',            # unsupported field
    'like(name, "x")',                  # unsupported operator
    'not(eq(is_root, true))',           # unsupported operator
    'eq(is_root, "yes")',               # wrong type
    'gt(is_root, true)',                # no order on booleans
    'eq(tags, "x")',                    # tags only with has
    'has(name, "x")',                   # has only on tags
    'eq(run_type, "llm"',               # unbalanced
    'eq(run_type, "banana")',           # not a run type
    'and(eq(is_root, true), )',         # dangling comma
    'eq(is_root, true) extra',          # trailing text
    'eq(name, unquoted)',               # strings are quoted
    '"just a string"',
])
def test_a_filter_outside_the_supported_language_is_422_never_ignored(api_client, project, destination, bad_filter):
    response = api_client.post(EXPORTS_URL, export_body(destination, project, filter=bad_filter), format="json")
    assert response.status_code == 422, response.json()
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "filter"] and error["msg"]
    assert not BulkExport.objects.exists()


def test_a_filter_on_is_root_and_run_type_exports_only_matching_trace_runs(
        api_client, workspace, project, s3, destination):
    runs = seed_trace_runs(workspace, project, days=1, per_day=30)
    export = create_export(api_client, destination, project, days=1,
                           filter='and(eq(is_root, true), or(eq(run_type, "llm"), eq(run_type, \'tool\')))')
    drain()
    table = read_parquet(s3, object_key(export, workspace, project, DAY1, 0)).read()
    expected = [str(r.id) for r in runs if r.is_root and r.run_type in ("llm", "tool")]
    assert table.column("id").to_pylist() == expected and 0 < len(expected) < 30
    assert set(table.column("run_type").to_pylist()) == {"llm", "tool"}


def test_has_neq_and_comparisons_on_names(api_client, workspace, project, s3, destination):
    runs = seed_trace_runs(workspace, project, days=1, per_day=12)
    condition = 'and(has(tags, "t1"), neq(run_type, "chain"), gte(name, "step-1"), lt(name, "step-9"))'
    export = create_export(api_client, destination, project, days=1, filter=condition)
    drain()
    table = read_parquet(s3, object_key(export, workspace, project, DAY1, 0)).read()
    expected = [str(r.id) for r in runs
                if "t1" in r.tags and r.run_type != "chain" and "step-1" <= r.name < "step-9"]
    assert table.column("id").to_pylist() == expected and expected


def test_another_workspaces_destination_or_project_is_404(api_client, outsider_client, project, destination, s3,
                                                          writer):
    foreign_project = TracingProject.objects.create(workspace=outsider_client.workspace, name="theirs")
    response = outsider_client.post(EXPORTS_URL, export_body(destination, foreign_project), format="json")
    assert response.status_code == 404 and response.json() == {"detail": "Destination not found"}
    theirs = create_destination(outsider_client, s3, writer)
    response = api_client.post(EXPORTS_URL, export_body(theirs, project), format="json")
    assert response.status_code == 404
    response = api_client.post(EXPORTS_URL, export_body(destination, foreign_project), format="json")
    assert response.status_code == 404 and "session" in response.json()["detail"]
    assert not BulkExport.objects.exists()


def test_another_workspaces_export_and_export_runs_are_404(api_client, outsider_client, project, destination):
    export = create_export(api_client, destination, project)
    run_id = export_runs_of(api_client, export["id"])[0]["id"]
    for path in (f"{EXPORTS_URL}/{export['id']}", f"{EXPORTS_URL}/{export['id']}/runs",
                 f"{EXPORTS_URL}/{export['id']}/runs/{run_id}",
                 f"{EXPORTS_URL}/runs?source_bulk_export_id={export['id']}"):
        assert outsider_client.get(path).status_code == 404, path
    assert outsider_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"},
                                 format="json").status_code == 404
    assert outsider_client.get(EXPORTS_URL).json() == []
    assert api_client.get(f"{EXPORTS_URL}/{export['id']}/runs/{uuid.uuid4()}").status_code == 404


def test_the_runs_route_is_never_read_as_an_export_id(api_client):
    response = api_client.get(f"{EXPORTS_URL}/runs")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "source_bulk_export_id"]
    response = api_client.get(f"{EXPORTS_URL}/runs?source_bulk_export_id=nope")
    assert response.status_code == 422


def test_reading_needs_bulk_exports_read_and_creating_needs_manage(make_client, workspace, project, destination):
    reader = make_client(workspace, permissions=["bulk-exports:read"])
    assert reader.get(EXPORTS_URL).status_code == 200
    assert reader.post(EXPORTS_URL, export_body(destination, project), format="json").status_code == 403
    assert make_client(workspace, permissions=["tracing:read"]).get(EXPORTS_URL).status_code == 403


def test_creation_is_throttled_per_workspace(api_client, project, destination, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "bulk-export-create": "2/min"}
    for _ in range(2):
        create_export(api_client, destination, project)
    response = api_client.post(EXPORTS_URL, export_body(destination, project), format="json")
    assert response.status_code == 429 and "Retry-After" in response.headers
    assert BulkExport.objects.count() == 2


# --- cancel ----------------------------------------------------------------------------------------


def test_cancelling_before_the_export_runs_start_ends_them_at_once(api_client, workspace, project, s3, destination):
    seed_trace_runs(workspace, project, days=3, per_day=3)
    export = create_export(api_client, destination, project)
    response = api_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "Cancelled" and response.json()["finished_at"] is not None
    assert {r["status"] for r in export_runs_of(api_client, export["id"])} == {"Cancelled"}
    drain()
    assert parquet_keys(s3) == []
    again = api_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"}, format="json")
    assert again.status_code == 200  # idempotent


def test_cancel_takes_only_the_cancelled_status(api_client, project, destination):
    export = create_export(api_client, destination, project)
    for body in ({"status": "Running"}, {}, {"status": "Cancelled", "end_time": None}):
        assert api_client.patch(f"{EXPORTS_URL}/{export['id']}", body, format="json").status_code == 422


def test_a_finished_export_cannot_be_cancelled(api_client, workspace, project, destination):
    seed_trace_runs(workspace, project, days=1, per_day=2)
    export = create_export(api_client, destination, project, days=1)
    drain()
    response = api_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"}, format="json")
    assert response.status_code == 409 and "Completed" in response.json()["detail"]


def test_cancelling_a_running_export_stops_its_export_run_at_the_next_batch(transactional_db, api_client, workspace,
                                                                    project, s3, destination, settings):
    settings.EXPORT_BATCH_ROWS = settings.EXPORT_ROW_GROUP_ROWS = 5
    settings.EXPORT_FILE_ROLLOVER_BYTES = 1
    settings.EXPORT_BATCH_PAUSE_SECONDS = 0.1
    seed_trace_runs(workspace, project, days=1, per_day=40, minutes_apart=1)
    export = create_export(api_client, destination, project, days=1)
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])

    def cancel():
        assert api_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"},
                                format="json").status_code == 200

    canceller = Background(lambda: BulkExportRun.objects.get(id=run.id).exported_files, cancel)
    drain()
    assert canceller.join()
    run.refresh_from_db()
    assert run.status == "Cancelled" and 1 <= len(run.exported_files) < 8
    assert len(parquet_keys(s3)) == len(run.exported_files)
    assert s3.client().list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
    assert BulkExport.objects.get(id=export["id"]).status == "Cancelled"


# --- destinations in use, limits ------------------------------------------------------------------------


def test_a_destination_in_use_by_an_unfinished_export_cannot_be_deleted(api_client, project, destination):
    export = create_export(api_client, destination, project)
    url = f"/api/v1/bulk-exports/destinations/{destination['id']}"
    assert api_client.delete(url).status_code == 409
    api_client.patch(f"{EXPORTS_URL}/{export['id']}", {"status": "Cancelled"}, format="json")
    assert api_client.delete(url).status_code == 204


def test_export_runs_beyond_the_workspace_limits_wait_in_the_queue(
        api_client, workspace, project, destination, settings):
    settings.EXPORT_MAX_RUNNING_RUNS = 2
    settings.EXPORT_MAX_RUNNING_EXPORTS = 1
    seed_trace_runs(workspace, project, days=3, per_day=2)
    first = create_export(api_client, destination, project)
    second = create_export(api_client, destination, project)
    export_services.export_runs_dispatch()
    queued = BulkExportRun.objects.filter(job_id__isnull=False)
    assert queued.count() == 2 and {str(r.bulk_export_id) for r in queued} == {first["id"]}
    assert Job.objects.filter(kind="exports.run").count() == 2
    assert set(BulkExportRun.objects.values_list("status", flat=True)) == {"Created"}  # waiting, not failed
    drain()
    for export in (first, second):
        assert api_client.get(f"{EXPORTS_URL}/{export['id']}").json()["status"] == "Completed"


def test_a_destination_whose_endpoint_names_the_bucket_gets_keys_without_it(api_client, workspace, project, s3,
                                                                           writer, localhost_dns):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer, endpoint_url=f"http://{BUCKET}.localhost:{s3.port}",
                                     include_bucket_in_prefix=False)
    export = create_export(api_client, destination, project, days=1)
    drain()
    key = object_key(export, workspace, project, DAY1, 0)
    assert parquet_keys(s3) == [key]
    assert export_runs_of(api_client, export["id"])[0]["metadata"]["result"]["exported_files"] == [key]

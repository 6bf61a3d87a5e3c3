"""Splitting `exports` into destinations and bulk_exports moved no table: rows written under the schema before the
split (the last `exports` migration that held every model) read back through the new models."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.destinations.models import CredentialVersion, Destination

pytestmark = pytest.mark.django_db(transaction=True)

LAST_BEFORE_THE_SPLIT = ("exports", "0003_destination_validation_failure")
DAY1 = datetime(2026, 3, 1, tzinfo=UTC)


def migrate_to_before_the_split():
    """Every other app as it is now, `exports` at its last migration before the split (bulk_exports unapplied)."""
    executor = MigrationExecutor(connection)
    others = [node for node in executor.loader.graph.leaf_nodes() if node[0] not in ("exports", "bulk_exports")]
    targets = [*others, LAST_BEFORE_THE_SPLIT]
    executor.migrate([*targets, ("bulk_exports", None)])
    return executor.loader.project_state(targets).apps


def migrate_to_now() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def write_rows_before_the_split(apps) -> dict:
    """One row in each of the four tables (two exports: a schedule and the child it spawned), the old way."""
    workspace = apps.get_model("accounts", "Workspace").objects.create(name="before the split")
    project = apps.get_model("tracing", "TracingProject").objects.create(workspace=workspace, name="traced")
    destination = apps.get_model("exports", "Destination").objects.create(
        workspace=workspace, display_name="Old bucket", config={"bucket_name": "old-bucket", "region": "eu-west-1"},
        credentials_keys=["access_key_id", "secret_access_key"], credentials_revision=1,
        validation_error="Access denied", validation_failed_at=DAY1)
    version = apps.get_model("exports", "CredentialVersion").objects.create(
        destination=destination, number=1, credentials_keys=["access_key_id", "secret_access_key"],
        secret='{"credentials": "kept encrypted"}')
    apps.get_model("exports", "Destination").objects.filter(id=destination.id).update(current_credentials=version)
    bulk_export = apps.get_model("exports", "BulkExport")
    schedule = bulk_export.objects.create(
        workspace=workspace, destination=destination, session=project, start_time=DAY1, interval_hours=24,
        status="IntervalScheduled", next_window=1, filter='eq(is_root, true)')
    child = bulk_export.objects.create(
        workspace=workspace, destination=destination, session=project, start_time=DAY1,
        end_time=DAY1 + timedelta(days=1), status="Running", source_bulk_export=schedule, export_fields=["id"])
    export_run = apps.get_model("exports", "BulkExportRun").objects.create(
        bulk_export=child, start_time=DAY1, end_time=DAY1 + timedelta(days=1), status="Running",
        credential_version=version, job_id=uuid.uuid4(), started_at=DAY1, rows_written=42,
        exported_files=["old-bucket/part-00000.parquet"], latest_cursor="cursor", errors={"retry_0": "blip"})
    content_type = apps.get_model("contenttypes", "ContentType").objects.get(app_label="exports", model="bulkexport")
    permission = apps.get_model("auth", "Permission").objects.create(
        content_type=content_type, codename="audit_bulkexport", name="Can audit bulk exports")
    return {"destination": destination.id, "version": version.id, "schedule": schedule.id, "child": child.id,
            "export_run": export_run.id, "content_type": content_type.id, "permission": permission.id}


def test_rows_written_before_the_split_read_back_through_the_new_models():
    old_apps = migrate_to_before_the_split()
    try:
        ids = write_rows_before_the_split(old_apps)
    finally:
        migrate_to_now()
    ContentType.objects.clear_cache()

    destination = Destination.objects.get(id=ids["destination"])
    assert destination.bucket_name == "old-bucket" and destination.validation_error == "Access denied"
    version = CredentialVersion.objects.get(id=ids["version"])
    assert destination.current_credentials_id == version.id
    assert version.secret == '{"credentials": "kept encrypted"}'
    child = BulkExport.objects.select_related("source_bulk_export", "destination").get(id=ids["child"])
    assert child.destination == destination and child.export_fields == ["id"]
    assert child.source_bulk_export.id == ids["schedule"] and child.source_bulk_export.is_scheduled
    assert child.source_bulk_export.filter == 'eq(is_root, true)'
    [export_run] = child.export_runs.all()
    assert export_run.id == ids["export_run"] and export_run.credential_version == version
    assert (export_run.rows_written, export_run.exported_files, export_run.errors) == (
        42, ["old-bucket/part-00000.parquet"], {"retry_0": "blip"})
    # The rules destinations keep through the reverse relations see the old rows.
    assert set(destination.bulk_exports.unfinished().values_list("id", flat=True)) == {ids["schedule"], ids["child"]}
    assert list(version.export_runs.unfinished()) == [export_run]
    # Permissions (and admin history) follow the models: their content type was relabelled, not replaced.
    content_type = ContentType.objects.get_for_model(BulkExport)
    assert (content_type.id, content_type.app_label) == (ids["content_type"], "bulk_exports")
    assert Permission.objects.get(id=ids["permission"]).content_type == content_type
    assert ContentType.objects.get_for_model(BulkExportRun).app_label == "bulk_exports"
    assert ContentType.objects.get_for_model(Destination).app_label == "exports"

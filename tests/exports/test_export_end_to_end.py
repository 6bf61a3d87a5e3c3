"""A whole export through the API and an in-process worker, read back with pyarrow from the S3 server."""

from __future__ import annotations

import json
from datetime import timedelta

import pyarrow as pa
import pytest

from tests.exports.support_exports import (
    DAY1,
    create_destination,
    create_export,
    drain,
    export_runs_of,
    seed_trace_runs,
)
from tests.exports.support_files import object_key, parquet_keys, read_parquet
from tracing.selectors import EXPORT_FIELDS

pytestmark = pytest.mark.usefixtures("egress_loopback")


def test_a_three_day_export_writes_exactly_the_expected_files(api_client, workspace, project, s3, writer, settings):
    settings.EXPORT_BATCH_ROWS = 4
    settings.EXPORT_ROW_GROUP_ROWS = 4
    runs = seed_trace_runs(workspace, project, days=3, per_day=10)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, compression="zstandard")
    assert export["status"] == "Created" and export["compression"] == "zstandard"
    drain()

    assert api_client.get(f"/api/v1/bulk-exports/{export['id']}").json()["status"] == "Completed"
    days = [DAY1 + timedelta(days=i) for i in range(3)]
    assert parquet_keys(s3) == sorted(object_key(export, workspace, project, day, 0) for day in days)
    exported_ids = []
    for day in days:
        parquet = read_parquet(s3, object_key(export, workspace, project, day, 0))
        assert parquet.metadata.num_rows == 10
        assert parquet.metadata.num_row_groups == 3  # 4 + 4 + 2 rows
        assert parquet.metadata.row_group(0).column(0).compression == "ZSTD"
        table = parquet.read()
        assert table.column_names == list(EXPORT_FIELDS)
        exported_ids += table.column("id").to_pylist()
    assert exported_ids == [str(run.id) for run in runs]

    schema = table.schema
    assert schema.field("start_time").type == pa.timestamp("us")  # v1: naive UTC
    assert schema.field("is_root").type == pa.bool_()
    assert schema.field("total_tokens").type == pa.int64()
    assert schema.field("total_cost").type == pa.float64()
    assert all(schema.field(name).type == pa.string() for name in ("inputs", "tags", "trace_id", "parent_run_ids"))
    first = table.slice(0, 1).to_pylist()[0]
    last_run = runs[-10]
    assert first["id"] == str(last_run.id) and first["tenant_id"] == str(workspace.id)
    assert first["start_time"] == last_run.start_time.replace(tzinfo=None)
    assert json.loads(first["inputs"]) == last_run.inputs and json.loads(first["tags"]) == last_run.tags
    assert first["total_cost"] == float(last_run.total_cost) and first["is_root"] is last_run.is_root
    assert first["outputs"] is not None and first["parent_run_id"] is None

    exported = export_runs_of(api_client, export["id"])
    assert [run["status"] for run in exported] == ["Completed"] * 3
    result = exported[0]["metadata"]["result"]
    assert result["rows_written"] == 10 and result["pending_upload"] is None
    assert result["exported_files"] == [f"export-bucket/{object_key(export, workspace, project, DAY1, 0)}"]
    assert result["latest_cursor"] == f"{runs[9].start_time.isoformat()},{runs[9].id}"
    assert exported[0]["retry_number"] == 0 and exported[0]["errors"] is None
    assert exported[0]["start_time"].startswith("2026-03-01T00:00:00")


def test_export_fields_and_v2_beta_timestamps(api_client, workspace, project, s3, writer):
    seed_trace_runs(workspace, project, days=1, per_day=5)
    destination = create_destination(api_client, s3, writer)
    fields = ["name", "id", "start_time", "total_cost"]
    export = create_export(api_client, destination, project, days=1, export_fields=fields, format_version="v2_beta",
                           compression="none")
    drain()
    parquet = read_parquet(s3, object_key(export, workspace, project, DAY1, 0))
    assert parquet.schema_arrow.names == fields
    assert parquet.schema_arrow.field("start_time").type == pa.timestamp("us", tz="UTC")
    assert parquet.metadata.row_group(0).column(0).compression == "UNCOMPRESSED"
    assert parquet.read().column("start_time")[0].as_py() == DAY1


@pytest.mark.parametrize("fields", [["name"], ["name", "start_time"], ["id", "name"], ["start_time", "name", "id"]])
def test_pages_resume_after_the_right_run_whether_or_not_start_time_and_id_are_exported(
        api_client, workspace, project, s3, writer, settings, fields):
    # The keyset cursor is taken from the exported start_time and id, or from columns selected for it alone.
    settings.EXPORT_BATCH_ROWS = 3
    runs = seed_trace_runs(workspace, project, days=1, per_day=10)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1, export_fields=fields, compression="none")
    drain()
    table = read_parquet(s3, object_key(export, workspace, project, DAY1, 0)).read()
    assert table.column_names == fields
    assert table.column("name").to_pylist() == [run.name for run in runs]
    if "id" in fields:
        assert table.column("id").to_pylist() == [str(run.id) for run in runs]
    result = export_runs_of(api_client, export["id"])[0]["metadata"]["result"]
    assert result["rows_written"] == 10
    assert result["latest_cursor"] == f"{runs[-1].start_time.isoformat()},{runs[-1].id}"

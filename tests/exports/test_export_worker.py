"""A real `run_worker` process is killed mid-run; another one finishes the run from the cursor."""

from __future__ import annotations

import signal

import pytest

from core.models import Job
from exports.bulk_exports.models import BulkExport, BulkExportRun
from tests.exports.support_destinations import BUCKET
from tests.exports.support_exports import DAY1, create_destination, create_export, seed_trace_runs
from tests.exports.support_files import parquet_keys, read_parquet
from tests.support_processes import wait_for
from tracing.models import TracingProject

pytestmark = [pytest.mark.live, pytest.mark.usefixtures("egress_loopback")]

WORKER_ENV = {
    "EGRESS_ALLOWLIST": "127.0.0.1",
    "EXPORT_BATCH_ROWS": "5",
    "EXPORT_ROW_GROUP_ROWS": "5",
    "EXPORT_FILE_ROLLOVER_BYTES": "1",  # every row group closes its file: 5 rows per file
    "EXPORT_BATCH_PAUSE_SECONDS": "0.25",
    "WORKER_LEASE_SECONDS": "2",
    "WORKER_POLL_SECONDS": "0.1",
    "EXPORT_SWEEP_SECONDS": "1",
    "LOG_LEVEL": "INFO",
    "TRACING_RETENTION_DAYS": "0",  # the seeded runs are older than the default retention
}


def test_a_killed_workers_export_run_is_finished_by_another_from_the_cursor(api_client, workspace, s3, writer,
                                                                     start_process):
    project = TracingProject.objects.create(workspace=workspace, name="killed")
    runs = seed_trace_runs(workspace, project, days=1, per_day=40, minutes_apart=1)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])

    first = start_process("run_worker", "--queues", "exports", env=WORKER_ENV)
    wait_for(lambda: len(BulkExportRun.objects.get(id=run.id).exported_files) >= 2, timeout=60, interval=0.02,
             describe=first.output)
    first.kill(signal.SIGKILL)
    killed_at = BulkExportRun.objects.get(id=run.id)
    assert killed_at.status == "Running" and killed_at.rows_written < 40, first.output()
    kept = {key: s3.client().head_object(Bucket=BUCKET, Key=key)["ETag"] for key in parquet_keys(s3)[:2]}
    assert len(kept) == 2

    second = start_process("run_worker", "--queues", "exports", env=WORKER_ENV)
    wait_for(lambda: BulkExport.objects.get(id=export["id"]).status == "Completed", timeout=90, interval=0.02)
    second.stop()

    finished = BulkExportRun.objects.get(id=run.id)
    assert finished.rows_written == 40 and len(finished.exported_files) == 8
    keys = parquet_keys(s3)
    assert len(keys) == 8
    assert {key: s3.client().head_object(Bucket=BUCKET, Key=key)["ETag"] for key in keys[:2]} == kept
    exported = [row for key in keys for row in read_parquet(s3, key).read().column("id").to_pylist()]
    assert exported == [str(r.id) for r in runs]  # no duplicate, no missing row, in order
    assert s3.client().list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
    # The same job, claimed again once the dead worker's lease expired; not a retry of the run.
    assert Job.objects.get(id=finished.job_id).attempts == 2 and finished.retry_number == 0
    assert keys[0].endswith(f"year={DAY1.year}/month={DAY1.month}/day={DAY1.day}/part-00000.parquet")

"""The memory bounds of an export run (pages, fetches, row groups, upload parts) do not cost a row."""

from __future__ import annotations

import math
import secrets
import uuid
from datetime import timedelta

import pytest

from exports.bulk_exports import parquet
from exports.bulk_exports.multipart import MIN_PART_BYTES
from exports.bulk_exports.reader import PartitionReader
from tests.exports.support_destinations import BUCKET
from tests.exports.support_exports import DAY1, create_destination, create_export, drain, export_runs_of
from tests.exports.support_files import object_key, read_parquet
from tracing.models import Run

pytestmark = pytest.mark.usefixtures("egress_loopback")
FETCH_BYTES = 64 * 1024


def seed_large_runs(workspace, project, count: int, payload_chars: int) -> list[Run]:
    """`count` runs of one day whose `inputs` hold `payload_chars` of random hex (Parquet cannot shrink them).

    Every 7th run starts on a whole second (no microseconds), where a text cursor could repeat a row.
    """
    runs = []
    for index in range(count):
        run_id = uuid.uuid4()
        started = DAY1 + timedelta(seconds=index, microseconds=0 if index % 7 == 0 else 1 + index % 997)
        runs.append(Run(id=run_id, workspace=workspace, session=project, trace_id=run_id, name=f"large-{index}",
                        run_type="chain", start_time=started, end_time=started, status="success", is_root=True,
                        dotted_order=started.strftime("%Y%m%dT%H%M%S%fZ") + str(run_id),
                        inputs={"text": secrets.token_hex(payload_chars // 2)}, outputs={"n": index}, tags=["big"]))
    for start in range(0, count, 500):
        Run.objects.bulk_create(runs[start:start + 500])
    return sorted(runs, key=lambda run: (run.start_time, run.id))


def test_an_export_run_larger_than_every_bound_is_written_in_many_row_groups_and_parts_with_every_row_once(
        api_client, workspace, project, s3, writer, settings):
    settings.EXPORT_BATCH_ROWS = 700
    settings.EXPORT_ROW_GROUP_ROWS = 100_000
    settings.EXPORT_ROW_GROUP_BYTES = 1024 * 1024
    settings.EXPORT_FETCH_BYTES = FETCH_BYTES
    settings.EXPORT_PART_BYTES = MIN_PART_BYTES
    runs = seed_large_runs(workspace, project, count=4000, payload_chars=3000)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1, compression="none")
    drain()

    key = object_key(export, workspace, project, DAY1, 0)
    parquet_file = read_parquet(s3, key)
    table = parquet_file.read(columns=["id", "start_time"])
    assert table.column("id").to_pylist() == [str(run.id) for run in runs]  # all, in order, none twice
    assert parquet_file.metadata.num_row_groups >= 12  # 12 MiB of inputs in row groups of at most ~1 MiB
    head = s3.client().head_object(Bucket=BUCKET, Key=key)
    parts = math.ceil(head["ContentLength"] / MIN_PART_BYTES)
    assert parts >= 3 and head["ETag"].strip('"').endswith(f"-{parts}")  # a multipart upload of that many parts
    assert export_runs_of(api_client, export["id"])[0]["metadata"]["result"]["rows_written"] == len(runs)


def test_a_page_holds_no_more_arrow_data_than_it_is_given_room_for(workspace, project):
    seed_large_runs(workspace, project, count=300, payload_chars=2000)
    fields = parquet.export_fields(None)
    reader = PartitionReader(session_id=project.id, start=DAY1, end=DAY1 + timedelta(days=1), fields=fields,
                             format_version="v1", condition=None, page_rows=10_000, fetch_bytes=FETCH_BYTES)
    room = 200 * 1024
    page = reader.read_page(None, max_bytes=room)
    assert room <= page.nbytes <= room + 2 * FETCH_BYTES and not page.last
    assert all(batch.nbytes <= 2 * FETCH_BYTES for batch, _ in page.batches)

    rest = reader.read_page(page.cursor, max_bytes=100 * 1024 * 1024)
    assert page.rows + rest.rows == 300 and rest.last

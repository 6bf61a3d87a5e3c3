"""Executing one export run (one UTC day of an export) inside a worker's job.

    take the run (pin credentials on first start) -> build the destination's S3 client (egress
    guard again) -> abort the upload a previous worker left pending -> read pages after the cursor
    -> row groups -> files rolled over at EXPORT_FILE_ROLLOVER_BYTES, each one multipart upload
    -> after each completed upload: files, rows and cursor move together -> Completed.

Memory, whatever the size of the day: a page and the row group being built share EXPORT_ROW_GROUP_BYTES of
Arrow data (each batch leaves its page as it joins the row group), the cursor is read EXPORT_FETCH_BYTES at a
time, and the upload stream holds two EXPORT_PART_BYTES parts (one uploading, one filling).

Between pages the run checks its lease, cancellation, the destination and its time limit.
Transient storage failures are retried (EXPORT_MAX_RETRIES, EXPORT_RETRY_DELAY_SECONDS apart) by
putting the job back in the queue; the retry resumes from the cursor. Everything else that the
storage says (auth, permission, bucket, egress refusal), unreadable credentials and a deleted
destination fail the run at once. Any failure aborts the upload in flight.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, EndpointConnectionError
from django.conf import settings

from core.egress import EgressDenied
from core.exceptions import ServiceError
from core.registry import RetryLater
from exports import filters, parquet, run_services, storage
from exports.errors import NotS3Endpoint, classify
from exports.layout import file_name, partition_parts
from exports.models import BulkExportRun, ExportStatus
from exports.multipart import MultipartUploadStream
from exports.reader import Cursor, PartitionReader, cursor_from_string, cursor_to_string
from exports.run_services import RunStop
from exports.selectors import credential_version_credentials

log = logging.getLogger("exports.jobs")

STORAGE_ERRORS = (ClientError, BotoCoreError, EgressDenied, NotS3Endpoint)
INTERNAL_ERROR = "Internal error while exporting (see the worker's log); the run will be retried."
STOP_STATUS = {"cancelled": ExportStatus.CANCELLED, "timed_out": ExportStatus.TIMED_OUT,
               "deleted": ExportStatus.FAILED}


def execute(*, run_id, lease) -> None:
    """The `exports.run` job: work on one run until it ends, must wait for a retry, or is lost."""
    run = run_services.run_begin(run_id=run_id)
    if run is None:
        return
    destination = None
    try:
        stop = run_services.run_verdict(run)
        if stop is not None:
            raise stop
        destination = _destination(run)
        _abort_pending(destination, run)
        _Export(destination, run, lease).write()
        run_services.run_finish(run, status=ExportStatus.COMPLETED)
    except RunStop as stop:
        _stopped(run, stop, destination)
    except ServiceError as exc:  # unreadable or missing credentials: no retry will help
        _fail(run, destination, exc.detail)
    except STORAGE_ERRORS as exc:
        _storage_failure(run, destination, exc)
    except Exception:
        log.exception("Bulk export run %s failed unexpectedly", run.id)
        _retry_or_fail(run, destination, INTERNAL_ERROR)
    finally:
        if destination is not None:
            destination.close()


def _destination(run: BulkExportRun) -> storage.S3Destination:
    credentials = credential_version_credentials(version=run.credential_version_id)
    # The egress guard checks the endpoint here again, and on every connection the client opens.
    return storage.s3_client(run.bulk_export.destination.config, credentials)


def _abort_pending(destination: storage.S3Destination | None, run: BulkExportRun) -> None:
    """Abort the upload a previous attempt left in flight; its file is written again from the cursor."""
    if destination is None or not run.pending_upload_id:
        return
    try:
        destination.client.abort_multipart_upload(Bucket=destination.bucket, Key=run.pending_key,
                                                  UploadId=run.pending_upload_id)
    except STORAGE_ERRORS as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
        if code != "NoSuchUpload" and classify(exc).category != "permission":
            raise
    run_services.run_upload_cleared(run)


def _stopped(run: BulkExportRun, stop: RunStop, destination) -> None:
    if stop.reason == "lost":
        log.warning("Bulk export run %s was taken over by another worker; stopping", run.id)
        return
    built = None
    if destination is None and run.pending_upload_id:
        # Stopped before its client was built (cancelled while waiting to resume): still abort the upload.
        try:
            destination = built = _destination(run)
        except (ServiceError, *STORAGE_ERRORS):
            pass
    try:
        _abort_quietly(destination, run)
    finally:
        if built is not None:
            built.close()
    error = None
    if stop.reason == "deleted":
        error = run_services.DESTINATION_DELETED
    elif stop.reason == "timed_out":
        error = run_services.TIMED_OUT.format(seconds=settings.EXPORT_RUN_MAX_SECONDS)
    run_services.run_finish(run, status=STOP_STATUS[stop.reason], error=error)


def _storage_failure(run: BulkExportRun, destination, exc: BaseException) -> None:
    failure = classify(exc)
    # A connection that broke mid-run is an interruption, not a verdict on the destination.
    transient = failure.retryable or isinstance(exc, (EndpointConnectionError, ConnectionClosedError))
    log.info("Bulk export run %s: storage failure %s (%s)", run.id, failure.category, type(exc).__name__)
    if transient:
        _retry_or_fail(run, destination, failure.message)
    else:
        _fail(run, destination, failure.message)


def _retry_or_fail(run: BulkExportRun, destination, error: str) -> None:
    _abort_quietly(destination, run)
    if run.retry_number >= settings.EXPORT_MAX_RETRIES:
        _fail(run, None, error)
        return
    try:
        run_services.run_retry_scheduled(run, error=error)
    except RunStop:
        return
    raise RetryLater(settings.EXPORT_RETRY_DELAY_SECONDS, f"export run retry {run.retry_number}: {error}")


def _fail(run: BulkExportRun, destination, error: str) -> None:
    _abort_quietly(destination, run)
    run_services.run_finish(run, status=ExportStatus.FAILED, error=error)


def _abort_quietly(destination, run: BulkExportRun) -> None:
    """Best effort: without s3:AbortMultipartUpload (or with a broken endpoint) the upload stays."""
    if destination is None or not run.pending_upload_id:
        return
    try:
        destination.client.abort_multipart_upload(Bucket=destination.bucket, Key=run.pending_key,
                                                  UploadId=run.pending_upload_id)
    except STORAGE_ERRORS as exc:
        log.info("Bulk export run %s: could not abort its pending upload (%s)", run.id, classify(exc).category)


@dataclass
class _OpenFile:
    key: str
    stream: MultipartUploadStream
    writer: pq.ParquetWriter
    rows: int = 0
    cursor: Cursor | None = None


class _Export:
    """Pages -> row groups -> files, for one run."""

    def __init__(self, destination: storage.S3Destination, run: BulkExportRun, lease):
        self.destination, self.run, self.lease = destination, run, lease
        export = run.bulk_export
        self.fields = parquet.export_fields(export.export_fields)
        self.schema = parquet.schema(self.fields, export.format_version)
        self.codec = parquet.CODECS[export.compression]
        self.codec_level = parquet.CODEC_LEVELS.get(export.compression)
        self.prefix_parts = partition_parts(export, run)
        condition = filters.to_q(filters.parse(export.filter)) if export.filter else None
        self.reader = PartitionReader(
            session_id=export.session_id, start=run.start_time, end=run.end_time, fields=self.fields,
            format_version=export.format_version, condition=condition, page_rows=settings.EXPORT_BATCH_ROWS,
            fetch_bytes=settings.EXPORT_FETCH_BYTES)
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = self.pending_bytes = 0
        self.pending_cursor: Cursor | None = None
        self.file: _OpenFile | None = None

    def write(self) -> None:
        try:
            for page in self.reader.pages(cursor_from_string(self.run.latest_cursor), room=self._room):
                while page.batches:  # each batch leaves the page as it joins the row group: never held twice
                    self._add(*page.batches.pop(0))
                self._checkpoint()
            self._flush_row_group()
            if self.file is not None:
                self._close_file()
        except BaseException:
            if self.file is not None:
                self.file.stream.stop()
            raise

    def _checkpoint(self) -> None:
        """A batch boundary: stop here if the run was lost, cancelled or ran out of time."""
        if self.lease is not None and self.lease.lost:
            raise RunStop("lost")
        stop = run_services.run_check(self.run)
        if stop is not None:
            raise stop
        if settings.EXPORT_BATCH_PAUSE_SECONDS:
            time.sleep(settings.EXPORT_BATCH_PAUSE_SECONDS)

    def _room(self) -> int:
        """Arrow data the next page may hold: the page and the row group share EXPORT_ROW_GROUP_BYTES."""
        return max(1, settings.EXPORT_ROW_GROUP_BYTES - self.pending_bytes)

    def _add(self, batch: pa.RecordBatch, cursor: Cursor) -> None:
        self.pending.append(batch)
        self.pending_cursor = cursor
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        if self.pending_rows >= settings.EXPORT_ROW_GROUP_ROWS or self.pending_bytes >= settings.EXPORT_ROW_GROUP_BYTES:
            self._flush_row_group()

    def _flush_row_group(self) -> None:
        if not self.pending:
            return
        if self.file is None:
            self._open_file()
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        self.file.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.file.rows += table.num_rows
        self.file.cursor = self.pending_cursor  # the (start_time, id) of the group's last row
        if self.file.stream.size >= settings.EXPORT_FILE_ROLLOVER_BYTES:
            self._close_file()

    def _open_file(self) -> None:
        index = len(self.run.exported_files)
        key = self.destination.key(*self.prefix_parts, file_name(index))
        created = self.destination.client.create_multipart_upload(
            Bucket=self.destination.bucket, Key=key, ContentType="application/vnd.apache.parquet",
            **self.destination.config.put_extra_args)
        run_services.run_upload_started(self.run, key=key, upload_id=created["UploadId"])
        stream = MultipartUploadStream(self.destination, key, created["UploadId"],
                                       part_bytes=settings.EXPORT_PART_BYTES)
        writer = pq.ParquetWriter(stream, self.schema, compression=self.codec, compression_level=self.codec_level,
                                  memory_pool=parquet.MEMORY_POOL)
        self.file = _OpenFile(key=key, stream=stream, writer=writer)

    def _close_file(self) -> None:
        file, self.file = self.file, None
        file.writer.close()
        file.stream.complete()
        run_services.run_file_completed(self.run, path=self.destination.display_path(file.key), rows=file.rows,
                                        cursor=cursor_to_string(file.cursor))

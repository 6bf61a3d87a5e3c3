"""Executing one export run (one UTC day of an export) inside a worker's job.

    take the export run (pin credentials on first start) -> build the destination's S3 client (egress
    guard again) -> abort the upload a previous worker left pending -> read pages of trace runs after the cursor
    -> row groups -> files rolled over at EXPORT_FILE_ROLLOVER_BYTES, each one multipart upload
    -> after each completed upload: files, rows and cursor move together -> Completed.

Memory, whatever the size of the day: a page and the row group being built share EXPORT_ROW_GROUP_BYTES of
Arrow data (each batch leaves its page as it joins the row group), the cursor is read EXPORT_FETCH_BYTES at a
time, and the upload stream holds two EXPORT_PART_BYTES parts (one uploading, one filling).

Between pages the export run checks its lease, cancellation, the destination and its time limit.
Transient storage failures are retried (EXPORT_MAX_RETRIES, EXPORT_RETRY_DELAY_SECONDS apart) by
putting the job back in the queue; the retry resumes from the cursor. Everything else that the
storage says (auth, permission, bucket, egress refusal), unreadable credentials and a deleted
destination fail the export run at once. Any failure aborts the upload in flight.
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
from exports import s3_clients
from exports.bulk_exports import filters, parquet, services
from exports.bulk_exports.layout import file_name, partition_parts
from exports.bulk_exports.models import BulkExportRun, ExportStatus
from exports.bulk_exports.multipart import MultipartUploadStream
from exports.bulk_exports.reader import Cursor, PartitionReader, cursor_from_string, cursor_to_string
from exports.bulk_exports.services import ExportRunStop
from exports.destinations.selectors import credential_version_credentials
from exports.storage_errors import NotS3Endpoint, classify

log = logging.getLogger("exports.jobs")

STORAGE_ERRORS = (ClientError, BotoCoreError, EgressDenied, NotS3Endpoint)
INTERNAL_ERROR = "Internal error while exporting (see the worker's log); the run will be retried."
STOP_STATUS = {"cancelled": ExportStatus.CANCELLED, "timed_out": ExportStatus.TIMED_OUT,
               "deleted": ExportStatus.FAILED}


def execute(*, export_run_id, lease) -> None:
    """The `exports.run` job: work on one export run until it ends, must wait for a retry, or is lost."""
    export_run = services.export_run_begin(export_run_id=export_run_id)
    if export_run is None:
        return
    destination = None
    try:
        stop = services.export_run_verdict(export_run)
        if stop is not None:
            raise stop
        destination = _destination(export_run)
        _abort_pending(destination, export_run)
        _Export(destination, export_run, lease).write()
        services.export_run_finish(export_run, status=ExportStatus.COMPLETED)
    except ExportRunStop as stop:
        _stopped(export_run, stop, destination)
    except ServiceError as exc:  # unreadable or missing credentials: no retry will help
        _fail(export_run, destination, exc.detail)
    except STORAGE_ERRORS as exc:
        _storage_failure(export_run, destination, exc)
    except Exception:
        log.exception("Bulk export run %s failed unexpectedly", export_run.id)
        _retry_or_fail(export_run, destination, INTERNAL_ERROR)
    finally:
        if destination is not None:
            destination.close()


def _destination(export_run: BulkExportRun) -> s3_clients.S3Destination:
    credentials = credential_version_credentials(version=export_run.credential_version_id)
    # The egress guard checks the endpoint here again, and on every connection the client opens.
    return s3_clients.s3_client(export_run.bulk_export.destination.config, credentials)


def _abort_pending(destination: s3_clients.S3Destination | None, export_run: BulkExportRun) -> None:
    """Abort the upload a previous attempt left in flight; its file is written again from the cursor."""
    if destination is None or not export_run.pending_upload_id:
        return
    try:
        _abort_upload(destination, export_run)
    except STORAGE_ERRORS as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") if isinstance(exc, ClientError) else None
        if code != "NoSuchUpload" and classify(exc).category != "permission":
            raise
    services.export_run_upload_cleared(export_run)


def _stopped(export_run: BulkExportRun, stop: ExportRunStop, destination) -> None:
    if stop.reason == "lost":
        log.warning("Bulk export run %s was taken over by another worker; stopping", export_run.id)
        return
    built = None
    if destination is None and export_run.pending_upload_id:
        # Stopped before its client was built (cancelled while waiting to resume): still abort the upload.
        try:
            destination = built = _destination(export_run)
        except (ServiceError, *STORAGE_ERRORS):
            pass
    try:
        _abort_quietly(destination, export_run)
    finally:
        if built is not None:
            built.close()
    error = None
    if stop.reason == "deleted":
        error = services.DESTINATION_DELETED
    elif stop.reason == "timed_out":
        error = services.TIMED_OUT.format(seconds=settings.EXPORT_RUN_MAX_SECONDS)
    services.export_run_finish(export_run, status=STOP_STATUS[stop.reason], error=error)


def _storage_failure(export_run: BulkExportRun, destination, exc: BaseException) -> None:
    failure = classify(exc)
    # A connection that broke mid-way is an interruption, not a verdict on the destination.
    transient = failure.retryable or isinstance(exc, (EndpointConnectionError, ConnectionClosedError))
    log.info("Bulk export run %s: storage failure %s (%s)", export_run.id, failure.category, type(exc).__name__)
    if transient:
        _retry_or_fail(export_run, destination, failure.message)
    else:
        _fail(export_run, destination, failure.message)


def _retry_or_fail(export_run: BulkExportRun, destination, error: str) -> None:
    _abort_quietly(destination, export_run)
    if export_run.retry_number >= settings.EXPORT_MAX_RETRIES:
        _fail(export_run, None, error)
        return
    try:
        services.export_run_retry_scheduled(export_run, error=error)
    except ExportRunStop:
        return
    raise RetryLater(settings.EXPORT_RETRY_DELAY_SECONDS, f"export run retry {export_run.retry_number}: {error}")


def _fail(export_run: BulkExportRun, destination, error: str) -> None:
    _abort_quietly(destination, export_run)
    services.export_run_finish(export_run, status=ExportStatus.FAILED, error=error)


def _abort_quietly(destination, export_run: BulkExportRun) -> None:
    """Best effort: without s3:AbortMultipartUpload (or with a broken endpoint) the upload stays."""
    if destination is None or not export_run.pending_upload_id:
        return
    try:
        _abort_upload(destination, export_run)
    except STORAGE_ERRORS as exc:
        log.info("Bulk export run %s: could not abort its pending upload (%s)", export_run.id, classify(exc).category)


def _abort_upload(destination: s3_clients.S3Destination, export_run: BulkExportRun) -> None:
    destination.client.abort_multipart_upload(Bucket=destination.bucket, Key=export_run.pending_key,
                                              UploadId=export_run.pending_upload_id)


@dataclass
class _OpenFile:
    key: str
    stream: MultipartUploadStream
    writer: pq.ParquetWriter
    cursor: Cursor  # the (start_time, id) of the last row written
    rows: int = 0


class _Export:
    """Pages -> row groups -> files, for one export run."""

    def __init__(self, destination: s3_clients.S3Destination, export_run: BulkExportRun, lease):
        self.destination, self.export_run, self.lease = destination, export_run, lease
        export = export_run.bulk_export
        self.fields = parquet.export_fields(export.export_fields)
        self.schema = parquet.schema(self.fields, export.format_version)
        self.codec = parquet.CODECS[export.compression]
        self.codec_level = parquet.CODEC_LEVELS.get(export.compression)
        self.prefix_parts = partition_parts(export, export_run)
        condition = filters.to_q(filters.parse(export.filter)) if export.filter else None
        self.reader = PartitionReader(
            session_id=export.session_id, start=export_run.start_time, end=export_run.end_time, fields=self.fields,
            format_version=export.format_version, condition=condition, page_rows=settings.EXPORT_BATCH_ROWS,
            fetch_bytes=settings.EXPORT_FETCH_BYTES)
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = self.pending_bytes = 0
        self.pending_cursor: Cursor | None = None
        self.file: _OpenFile | None = None

    def write(self) -> None:
        try:
            for page in self.reader.pages(cursor_from_string(self.export_run.latest_cursor), room=self._room):
                while page.batches:  # each batch leaves the page as it joins the row group: never held twice
                    self._add(*page.batches.pop(0))
                self._checkpoint()
            self._flush_row_group()
            if self.file is not None:
                self._close_file(self.file)
        except BaseException:
            if self.file is not None:
                self.file.stream.stop()
            raise

    def _checkpoint(self) -> None:
        """A batch boundary: stop here if the export run was lost, cancelled or ran out of time."""
        if self.lease is not None and self.lease.lost:
            raise ExportRunStop("lost")
        stop = services.export_run_check(self.export_run)
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
        cursor = self.pending_cursor  # the (start_time, id) of the group's last row; set with the first batch
        if not self.pending or cursor is None:
            return
        file = self.file if self.file is not None else self._open_file(cursor)
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        file.writer.write_table(table, row_group_size=max(1, table.num_rows))
        file.rows += table.num_rows
        file.cursor = cursor
        if file.stream.size >= settings.EXPORT_FILE_ROLLOVER_BYTES:
            self._close_file(file)

    def _open_file(self, cursor: Cursor) -> _OpenFile:
        index = len(self.export_run.exported_files)
        key = self.destination.key(*self.prefix_parts, file_name(index))
        created = self.destination.client.create_multipart_upload(
            Bucket=self.destination.bucket, Key=key, ContentType="application/vnd.apache.parquet",
            **self.destination.config.put_extra_args)
        services.export_run_upload_started(self.export_run, key=key, upload_id=created["UploadId"])
        stream = MultipartUploadStream(self.destination, key, created["UploadId"],
                                       part_bytes=settings.EXPORT_PART_BYTES)
        writer = pq.ParquetWriter(stream, self.schema, compression=self.codec, compression_level=self.codec_level,
                                  memory_pool=parquet.MEMORY_POOL)
        self.file = _OpenFile(key=key, stream=stream, writer=writer, cursor=cursor)
        return self.file

    def _close_file(self, file: _OpenFile) -> None:
        self.file = None
        file.writer.close()
        file.stream.complete()
        services.export_run_file_completed(self.export_run, path=self.destination.display_path(file.key),
                                           rows=file.rows, cursor=cursor_to_string(file.cursor))

"""Where an export's files go in the bucket (LangSmith's newest documented layout):

    <prefix>/export_id=<id>/tenant_id=<tenant>/session_id=<session>/resource=runs/
        year=<Y>/month=<M>/day=<D>/part-<nnnnn>.parquet

Month and day are not zero-padded (as in LangSmith's exported paths); file numbers are, so
that names sort in write order. The destination's prefix and `include_bucket_in_prefix` apply
through `storage.S3Destination.key()` / `.display_path()`, exactly as for the test write.
"""

from __future__ import annotations

from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.s3_clients import S3Config, S3Destination


def partition_parts(export: BulkExport, export_run: BulkExportRun) -> list[str]:
    """The Hive-style partition of an export run (its UTC day), under the destination's prefix."""
    day = export_run.start_time
    return [f"export_id={export.id}", f"tenant_id={export.workspace_id}", f"session_id={export.session_id}",
            "resource=runs", f"year={day.year}", f"month={day.month}", f"day={day.day}"]


def file_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def paths(export: BulkExport) -> S3Destination:
    """Key and display-path helpers of the export's destination, without a client."""
    return S3Destination(None, S3Config.from_dict(export.destination.config))

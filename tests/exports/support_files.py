"""The files a bulk export writes to the S3 server: their keys, and reading them back with pyarrow."""

from __future__ import annotations

import io
from datetime import datetime

import pyarrow.parquet as pq

from exports.bulk_exports.models import BulkExport
from tests.exports.support_destinations import BUCKET


def object_key(export: BulkExport | dict, workspace, project, day: datetime, part: int, prefix: str = "exports") -> str:
    export_id = export["id"] if isinstance(export, dict) else export.id
    return (f"{prefix}/export_id={export_id}/tenant_id={workspace.id}/session_id={project.id}/resource=runs/"
            f"year={day.year}/month={day.month}/day={day.day}/part-{part:05d}.parquet")


def read_parquet(s3, key: str, bucket: str = BUCKET):
    body = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return pq.ParquetFile(io.BytesIO(body))


def parquet_keys(s3, bucket: str = BUCKET) -> list[str]:
    contents = s3.client().list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(o["Key"] for o in contents if o["Key"].endswith(".parquet"))

"""Bulk export of trace data into object storage, as two Django apps.

- `exports.destinations` (app label `exports`): destinations, their credential versions and the test write
  that validates them.
- `exports.bulk_exports` (app label `bulk_exports`): bulk exports and their export runs, the worker that
  writes an export run's Parquet files, and schedules.

bulk_exports imports destinations, never the reverse. Both build their S3 clients with `exports.s3_clients`
(failures classified by `exports.storage_errors`, credentials kept out of logs by `exports.logredact`).
"""

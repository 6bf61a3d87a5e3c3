"""Build ingestion bodies exactly as the official SDK does, with its own encoder (plain or zstd)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from langsmith._internal._compressed_traces import CompressedTraces
from langsmith._internal._constants import _BOUNDARY
from langsmith._internal._multipart import RewindableMultipartBody, join_multipart_parts_and_context
from langsmith._internal._operations import (
    compress_multipart_parts_and_context,
    serialize_run_dict,
    serialized_run_operation_to_multipart_parts_and_context,
)

BASE_TIME = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def run_body(*, parent: dict | None = None, name: str = "step", run_type: str = "chain", session_name="proj",
             offset_ms: int = 0, **fields) -> dict:
    """A run as the SDK posts it, with trace_id and dotted_order consistent with `parent`."""
    run_id = fields.pop("id", None) or uuid.uuid4()
    start = BASE_TIME + timedelta(milliseconds=offset_ms)
    segment = start.strftime("%Y%m%dT%H%M%S%fZ") + str(run_id)
    body = {
        "id": str(run_id), "name": name, "run_type": run_type, "start_time": start.isoformat(),
        "inputs": {"question": name}, "session_name": session_name,
        "trace_id": parent["trace_id"] if parent else str(run_id),
        "dotted_order": f"{parent['dotted_order']}.{segment}" if parent else segment,
    }
    if parent:
        body["parent_run_id"] = parent["id"]
    body.update(fields)
    return body


def multipart(ops: list[tuple[str, dict]], *, compress: bool = False) -> tuple[bytes, dict]:
    """(body, headers) of POST /runs/multipart for [("post"|"patch", run), ...], as the SDK encodes it."""
    forms = [serialized_run_operation_to_multipart_parts_and_context(serialize_run_dict(kind, dict(run)))[0]
             for kind, run in ops]
    content_type = f"multipart/form-data; boundary={_BOUNDARY}"
    if not compress:
        body = RewindableMultipartBody(join_multipart_parts_and_context(forms).parts, _BOUNDARY).to_bytes()
        return body, {"content_type": content_type}
    traces = CompressedTraces()
    for form in forms:
        compress_multipart_parts_and_context(form, traces, _BOUNDARY)
    traces.compressor_writer.write(f"--{_BOUNDARY}--\r\n".encode())
    traces.compressor_writer.close()
    return traces.buffer.getvalue(), {"content_type": content_type, "HTTP_CONTENT_ENCODING": "zstd"}

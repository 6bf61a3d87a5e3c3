"""Request bodies of the LangSmith ingestion API, as the official SDK sends them.

- `POST /runs/batch`: JSON `{"post": [run, ...], "patch": [run, ...]}`.
- `POST /runs/multipart`: `multipart/form-data`, optionally `Content-Encoding: zstd`. Part names:
  `post.<run_id>` / `patch.<run_id>` hold the run without its large fields, which follow as
  `post.<run_id>.inputs` (`.outputs`, `.events`, `.extra`, `.error`, `.serialized`), each JSON;
  `attachment.<run_id>.<name>` and `feedback.<id>` parts are accepted and not stored.
- `POST /runs` and `PATCH /runs/<run_id>`: one JSON run.

This module only decodes (decompression, multipart, JSON); `tracing.validation` checks the runs.
"""

from __future__ import annotations

import io
import re
import uuid
from dataclasses import dataclass, field

import orjson
import zstandard

from core import json_input
from core.exceptions import PayloadTooLarge, RequestValidationError, ServiceError
from core.rest_errors import validation_item
from tracing.validation import without_nul

# Parts that carry a run's large fields. `serialized` (a model's constructor) is not part of the
# stored run format and is dropped without being parsed.
FIELD_PARTS = frozenset({"inputs", "outputs", "events", "extra", "error"})
_DISPOSITION_NAME = re.compile(rb'(?im)^content-disposition:[^\r\n]*?\bname="([^"]*)"')
_USUAL_DISPOSITION = b'Content-Disposition: form-data; name="'
_READ_CHUNK = 1024 * 1024


class UnsupportedMediaType(ServiceError, status=415, detail="Unsupported media type."): ...


@dataclass
class RawBatch:
    """Runs decoded from one request, before validation: (kind, loc, body, run id from the part name)."""

    runs: list[tuple[str, list, object, uuid.UUID | None]] = field(default_factory=list)
    ignored_parts: int = 0


def decompress(body: bytes, encoding: str, *, limit: int) -> bytes:
    """Undo `Content-Encoding: zstd` (what the SDK sends), refusing to inflate past `limit` bytes."""
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding != "zstd":
        raise UnsupportedMediaType(f"Unsupported Content-Encoding {encoding!r}: send zstd or none.")
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body), read_across_frames=True)
    chunks, total = [], 0
    try:
        while chunk := reader.read(_READ_CHUNK):
            total += len(chunk)
            if total > limit:
                raise PayloadTooLarge(f"Request body is too large: it decompresses to more than {limit} bytes.")
            chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise RequestValidationError.single(["body"], f"Invalid zstd data: {exc}", "value_error") from None
    return b"".join(chunks)


def loads(data: bytes, loc: list):
    try:
        value = orjson.loads(data)
        json_input.check(value, nul=False)
    except (orjson.JSONDecodeError, json_input.JsonRefused) as exc:
        raise RequestValidationError.single(loc, f"Invalid JSON: {exc}", "json_invalid") from None
    # JSON can only carry a NUL as an escape, so a byte search finds every candidate cheaply.
    return without_nul(value) if b"\\u0000" in data else value


def batch_from_json(body: bytes) -> RawBatch:
    """Decode `{"post": [...], "patch": [...]}`."""
    data = loads(body, ["body"])
    if not isinstance(data, dict):
        raise RequestValidationError.single(["body"], "Input should be a valid dictionary", "dict_type")
    batch = RawBatch()
    errors = []
    for kind in ("post", "patch"):
        runs = data.get(kind)
        if runs is None:
            continue
        if not isinstance(runs, list):
            errors.append(validation_item(["body", kind], "Input should be a valid list", "list_type"))
            continue
        batch.runs += [(kind, ["body", kind, index], run, None) for index, run in enumerate(runs)]
    if errors:
        raise RequestValidationError(errors)
    return batch


def boundary_of(content_type: str) -> bytes:
    media_type, _, params = content_type.partition(";")
    if media_type.strip().lower() != "multipart/form-data":
        raise UnsupportedMediaType("Send multipart/form-data to /runs/multipart.")
    match = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', params)
    if not match:
        raise RequestValidationError.single(["header", "content-type"], "The multipart boundary is missing.",
                                            "value_error")
    return (match.group(1) or match.group(2)).encode("latin-1")


def iter_parts(body: bytes, boundary: bytes):
    """Yield (name, data) for each part of a multipart/form-data body."""
    delimiter = b"--" + boundary
    start = body.find(delimiter)
    if start < 0:
        raise RequestValidationError.single(["body"], "No multipart boundary found in the body.", "value_error")
    chunks = body.split(b"\r\n" + delimiter)
    if start >= 2 and body[start - 2:start] == b"\r\n":
        chunks = chunks[1:]  # a preamble ended by CRLF: the split already cut it off
    else:
        chunks[0] = chunks[0][start + len(delimiter):]
    for chunk in chunks:
        if chunk.startswith(b"--"):
            return
        if not chunk.startswith(b"\r\n"):
            raise RequestValidationError.single(["body"], "Malformed multipart body.", "value_error")
        if chunk.startswith(b"\r\n\r\n"):
            headers, data = b"", chunk[4:]
        else:
            end = chunk.find(b"\r\n\r\n")
            if end < 0:
                raise RequestValidationError.single(["body"], "Malformed multipart part headers.", "value_error")
            headers, data = chunk[2:end], chunk[end + 4:]
        name = _part_name(headers)
        if name is None:
            raise RequestValidationError.single(["body"], "A multipart part has no name.", "value_error")
        yield name.decode("utf-8", "replace"), data
    raise RequestValidationError.single(["body"], "The multipart body is truncated: no closing boundary.",
                                        "value_error")


def _part_name(headers: bytes) -> bytes | None:
    # What the SDK (and every browser) sends first, read without the regex; the regex gives the same
    # name here (the earliest match), and reads every other form of the header.
    if headers.startswith(_USUAL_DISPOSITION):
        end = headers.find(b'"', len(_USUAL_DISPOSITION))
        if end >= 0:
            return headers[len(_USUAL_DISPOSITION):end]
    match = _DISPOSITION_NAME.search(headers)
    return match.group(1) if match else None


def batch_from_multipart(body: bytes, content_type: str) -> RawBatch:
    """Decode a multipart ingestion body into run bodies, joining each run's field parts onto it."""
    batch = RawBatch()
    current: dict[str, dict] = {}
    errors = []
    for name, data in iter_parts(body, boundary_of(content_type)):
        kind, _, rest = name.partition(".")
        if kind not in ("post", "patch"):
            # attachment.*, feedback.* and kinds newer SDKs may add: accepted, not stored.
            batch.ignored_parts += 1
            continue
        run_part, _, field_name = rest.partition(".")
        main_name = f"{kind}.{run_part}"
        if not field_name:
            try:
                run_id = uuid.UUID(run_part)
            except ValueError:
                errors.append(validation_item(["body", name], "Part names are <post|patch>.<run uuid>[.<field>].",
                                              "value_error"))
                continue
            run = loads(data, ["body", name])
            # A body that is not an object is reported by validation; its field parts go nowhere.
            current[main_name] = run if isinstance(run, dict) else {}
            batch.runs.append((kind, ["body", name], run, run_id))
        elif main_name not in current:
            errors.append(validation_item(["body", name], f"Part {main_name} must come before its field parts.",
                                          "value_error"))
        elif field_name in FIELD_PARTS:
            current[main_name][field_name] = loads(data, ["body", name])
        else:
            batch.ignored_parts += 1
    if errors:
        raise RequestValidationError(errors)
    return batch

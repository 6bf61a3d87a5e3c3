"""Validation of runs in LangSmith's run format, shared by every ingestion route and the tracer.

Hand-written rather than a DRF serializer: it runs once per run on the ingestion hot path, where a
serializer costs several times more than the database insert. Errors use the service's 422 shape
(`{"loc", "msg", "type"}`, pydantic's type names). Fields the format does not define are ignored, as
LangSmith does: newer SDKs add fields, and a trace store must not drop their runs for that.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from django.db.models import Field

from core.rest_errors import validation_item
from tracing.models import Run, TracingProject

RUN_TYPES = frozenset(Run.RunType.values)
_SEGMENT = re.compile(r"^(\d{8}T\d{12}Z)([0-9a-fA-F-]{36})$")


class FieldError(Exception):
    def __init__(self, msg: str, type_: str):
        self.msg = msg
        self.type = type_
        super().__init__(msg)


def _uuid(value) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return _uuid_from_text(value)
        except ValueError:
            pass
    raise FieldError("Input should be a valid UUID", "uuid_parsing")


# The runs of a trace repeat their trace's and parents' ids (in trace_id, parent_run_id and every
# dotted_order segment): parsed once per batch instead of once per mention. UUIDs are immutable.
_PARSE_CACHE_SIZE = 4096


@lru_cache(maxsize=_PARSE_CACHE_SIZE)
def _uuid_from_text(text: str) -> uuid.UUID:
    return uuid.UUID(text)


def _datetime(value) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise FieldError("Input should be a valid datetime", "datetime_parsing") from None
    else:
        raise FieldError("Input should be a valid datetime", "datetime_type")
    # The SDK sends UTC; a naive time is taken to be UTC too. Stored and ordered in UTC, so a time
    # that has no UTC equivalent (year 1 east of Greenwich, year 9999 west of it) is refused here.
    try:
        return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except OverflowError:
        raise FieldError("Input should be a datetime between years 1 and 9999 in UTC", "datetime_range") from None


def _str(value) -> str:
    if not isinstance(value, str):
        raise FieldError("Input should be a valid string", "string_type")
    return value


def _name(value) -> str:
    if not _str(value):
        raise FieldError("String should have at least 1 character", "string_too_short")
    return value


def _max_length(field: Field) -> int:
    """The max_length of a CharField (which always has one)."""
    if field.max_length is None:
        raise TypeError(f"{field} has no max_length")
    return field.max_length


def _bounded_str(max_length: int, *, blank: bool = True):
    """A string converter for a column of at most `max_length` characters (PostgreSQL refuses longer)."""

    def convert(value) -> str:
        text = _str(value) if blank else _name(value)
        if len(text) > max_length:
            raise FieldError(f"String should have at most {max_length} characters", "string_too_long")
        return text

    return convert


def _run_type(value) -> str:
    if not isinstance(value, str) or value not in RUN_TYPES:
        raise FieldError(f"Input should be one of: {', '.join(sorted(RUN_TYPES))}", "enum")
    return value


def _dict(value) -> dict:
    if not isinstance(value, dict):
        raise FieldError("Input should be a valid dictionary", "dict_type")
    return value


def _events(value) -> list:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise FieldError("Input should be a valid list of objects", "list_type")
    return value


def _tags(value) -> list:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FieldError("Input should be a valid list of strings", "list_type")
    return value


def _int(value) -> int:
    if isinstance(value, float) and value.is_integer():
        # JSON integers past 64 bits arrive as floats (orjson): they are range-checked like the rest.
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError("Input should be a valid integer", "int_type")
    if not 0 <= value < 2**63:
        raise FieldError("Input should be a non-negative 64-bit integer", "int_range")
    return value


def _decimal(value) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FieldError("Input should be a valid decimal", "decimal_type")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise FieldError("Input should be a valid decimal", "decimal_parsing") from None
    if not number.is_finite() or abs(number) >= 10**10:
        raise FieldError("Input should be a finite decimal below 10^10", "decimal_range")
    # Rounding to the column's 10 places can carry into an 11th integer digit (9999999999.99999999999).
    number = number.quantize(Decimal("1e-10"))
    if abs(number) >= 10**10:
        raise FieldError("Input should be a finite decimal below 10^10", "decimal_range")
    return number


# Wire field -> converter. Each lands in the model field of the same name.
FIELDS = {
    "name": _name,
    "run_type": _run_type,
    "start_time": _datetime,
    "end_time": _datetime,
    "inputs": _dict,
    "outputs": _dict,
    "error": _str,
    "extra": _dict,
    "events": _events,
    "tags": _tags,
    "trace_id": _uuid,
    "parent_run_id": _uuid,
    "dotted_order": _str,
    "reference_example_id": _uuid,
    "trace_tier": _bounded_str(_max_length(Run._meta.get_field("trace_tier"))),
    "feedback_stats": _dict,
    "total_tokens": _int,
    "prompt_tokens": _int,
    "completion_tokens": _int,
    "total_cost": _decimal,
    "prompt_cost": _decimal,
    "completion_cost": _decimal,
    "first_token_time": _datetime,
}
_SESSION_NAME = _bounded_str(_max_length(TracingProject._meta.get_field("name")), blank=False)
# Set once, when a run is first stored; later posts and patches never move a run.
IDENTITY_FIELDS = ("trace_id", "parent_run_id", "parent_run_ids", "dotted_order", "is_root")


@dataclass(slots=True)
class RunOp:
    """One validated post or patch: the model fields it carries, and where it sits in the request."""

    kind: str
    id: uuid.UUID
    loc: list
    fields: dict = field(default_factory=dict)
    session_name: str | None = None
    session_id: uuid.UUID | None = None


def run_op_from_wire(raw, *, kind: str, loc: list, run_id: uuid.UUID | None = None) -> tuple[RunOp | None, list]:
    """Validate one run body; return the op (None when invalid) and its errors."""
    if not isinstance(raw, dict):
        return None, [validation_item(loc, "Input should be a valid dictionary", "dict_type")]
    errors: list[dict] = []
    op_id = _checked_id(raw.get("id"), run_id, loc, errors)
    fields = {}
    for name, convert in FIELDS.items():
        value = raw.get(name)
        if value is not None:
            try:
                fields[name] = convert(value)
            except FieldError as exc:
                errors.append(validation_item([*loc, name], exc.msg, exc.type))
    session = _read_session(raw, loc, errors)
    if kind == "post":
        for required in ("name", "run_type"):
            if required not in fields and not any(e["loc"] == [*loc, required] for e in errors):
                errors.append(validation_item([*loc, required], "Field required", "missing"))
    if errors or op_id is None:
        return None, errors
    op = RunOp(kind=kind, id=op_id, loc=loc, fields=fields, **session)
    _place_in_tree(op, errors)
    _derive_usage(op)
    return (None, errors) if errors else (op, [])


def _checked_id(value, run_id, loc, errors) -> uuid.UUID | None:
    if value is None and run_id is not None:
        return run_id
    try:
        parsed = _uuid(value) if value is not None else None
    except FieldError as exc:
        errors.append(validation_item([*loc, "id"], exc.msg, exc.type))
        return None
    if parsed is None:
        errors.append(validation_item([*loc, "id"], "Field required", "missing"))
    elif run_id is not None and parsed != run_id:
        errors.append(validation_item([*loc, "id"], f"The body's id does not match the run id {run_id}.",
                                      "value_error"))
        return None
    return parsed


def _read_session(raw: dict, loc: list, errors: list) -> dict:
    """The run's `session_name` and `session_id` (those it sends), as RunOp keyword arguments."""
    session = {}
    for name, convert in (("session_name", _SESSION_NAME), ("session_id", _uuid)):
        if raw.get(name) is not None:
            try:
                session[name] = convert(raw[name])
            except FieldError as exc:
                errors.append(validation_item([*loc, name], exc.msg, exc.type))
    return session


def without_nul(value):
    """Replace NUL characters, which PostgreSQL refuses in text and jsonb, with U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    return value


def parse_dotted_order(dotted_order: str) -> list[tuple[str, uuid.UUID]]:
    """Split `<YYYYMMDDTHHMMSSffffff>Z<uuid>` segments joined by '.'; ValueError when malformed."""
    return [_parse_segment(part) for part in dotted_order.split(".")]


@lru_cache(maxsize=_PARSE_CACHE_SIZE)
def _parse_segment(part: str) -> tuple[str, uuid.UUID]:
    match = _SEGMENT.match(part)
    if match is None:
        raise ValueError(part)
    return match.group(1), _uuid_from_text(match.group(2))


def dotted_segment(start_time: datetime, run_id: uuid.UUID) -> str:
    utc = start_time.astimezone(UTC)
    # strftime's %Y does not pad years before 1000 to four digits; a segment always has eight.
    return f"{utc.year:04d}{utc:%m%dT%H%M%S%f}Z{run_id}"


def _place_in_tree(op: RunOp, errors: list) -> None:
    """Check `dotted_order` against id, trace_id and parent_run_id and derive the tree fields from it.

    Without a dotted_order the run's place is worked out later: a run without a parent is a root; a
    child needs its parent's dotted_order, from the same request or the database.
    """
    fields = op.fields
    dotted_order = fields.get("dotted_order")
    if dotted_order is None:
        return
    loc = [*op.loc, "dotted_order"]
    try:
        segments = parse_dotted_order(dotted_order)
    except ValueError as exc:
        errors.append(validation_item(loc, f"Malformed segment {str(exc)[:80]!r}: segments are "
                                      "<YYYYMMDDTHHMMSSffffff>Z<uuid> joined by '.'.", "value_error"))
        return
    ids = [segment_id for _, segment_id in segments]
    problem = None
    if ids[-1] != op.id:
        problem = "its last segment must be the run's own id"
    elif fields.setdefault("trace_id", ids[0]) != ids[0]:
        problem = "its first segment must be the trace_id"
    elif "parent_run_id" in fields and (len(ids) < 2 or ids[-2] != fields["parent_run_id"]):
        problem = "its second-to-last segment must be the parent_run_id"
    if problem:
        errors.append(validation_item(loc, f"dotted_order does not match the run: {problem}.", "value_error"))
        return
    set_tree_fields(fields, ids)


def set_tree_fields(fields: dict, ids: list[uuid.UUID]) -> None:
    fields["trace_id"] = ids[0]
    fields["parent_run_id"] = ids[-2] if len(ids) > 1 else None
    fields["parent_run_ids"] = [str(ancestor) for ancestor in ids[:-1]]
    fields["is_root"] = len(ids) == 1


def _derive_usage(op: RunOp) -> None:
    """Fill token counts, costs and first_token_time from where SDKs and LangChain put them."""
    fields = op.fields
    if "first_token_time" not in fields:
        for event in fields.get("events") or ():
            if event.get("name") == "new_token" and event.get("time"):
                try:
                    fields["first_token_time"] = _datetime(event["time"])
                except FieldError:
                    pass
                break
    if any(name in fields for name in ("total_tokens", "prompt_tokens", "completion_tokens")):
        return
    usage = find_usage(fields.get("outputs"), fields.get("extra"))
    if usage:
        for name, value in usage.items():
            fields.setdefault(name, value)


# (model field, keys that carry it) in LangChain's usage_metadata and OpenAI-style token_usage.
_USAGE_KEYS = (
    ("prompt_tokens", ("input_tokens", "prompt_tokens")),
    ("completion_tokens", ("output_tokens", "completion_tokens")),
    ("total_tokens", ("total_tokens",)),
    ("prompt_cost", ("input_cost", "prompt_cost")),
    ("completion_cost", ("output_cost", "completion_cost")),
    ("total_cost", ("total_cost",)),
)


def find_usage(outputs: dict | None, extra: dict | None) -> dict:
    """Token counts (and costs, when reported) of an LLM run, or {} when it reports none."""
    outputs = outputs or {}
    metadata = (extra or {}).get("metadata") if isinstance(extra, dict) else None
    candidates = [
        outputs.get("usage_metadata"),
        metadata.get("usage_metadata") if isinstance(metadata, dict) else None,
        _generations_usage(outputs.get("generations")),
        (outputs.get("llm_output") or {}).get("token_usage") if isinstance(outputs.get("llm_output"), dict) else None,
        outputs.get("usage"),
    ]
    for candidate in candidates:
        usage = _usage_fields(candidate) if isinstance(candidate, dict) else {}
        if usage:
            return usage
    return {}


def _usage_fields(raw: dict) -> dict:
    usage = {}
    for target, keys in _USAGE_KEYS:
        for key in keys:
            value = raw.get(key)
            if value is None:
                continue
            try:
                usage[target] = _decimal(value) if target.endswith("_cost") else _int(value)
            except FieldError:
                pass
            break
    if "total_tokens" not in usage and ("prompt_tokens" in usage or "completion_tokens" in usage):
        usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    return usage


def _generations_usage(generations) -> dict | None:
    """Sum usage_metadata over an LLMResult's generations (messages in LangChain's serialized form)."""
    if not isinstance(generations, list):
        return None
    total: dict = {}
    for batch in generations:
        for generation in batch if isinstance(batch, list) else ():
            message = generation.get("message") if isinstance(generation, dict) else None
            if not isinstance(message, dict):
                continue
            kwargs = message.get("kwargs")
            usage = (kwargs if isinstance(kwargs, dict) else message).get("usage_metadata")
            if isinstance(usage, dict):
                for key in ("input_tokens", "output_tokens", "total_tokens"):
                    if isinstance(usage.get(key), int):
                        total[key] = total.get(key, 0) + usage[key]
    return total or None

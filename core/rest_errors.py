"""The REST APIs' error bodies, FastAPI's shapes: the one place they are built.

- `{"detail": "<message>"}` with the error's status;
- 422 `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}` for a request that does not validate (pydantic's
  names for the types where it has one).

DRF views answer through `api_error_response` (rendered by the view's renderer, as every other DRF response);
middleware and plain Django views through `error_response`; code below Django (Daphne's HTTP parser) writes
`error_json`. The Agent Server API answers `{"detail": "<message>"}` too, even for validation (agentserver/http.py).
"""

from __future__ import annotations

import json

from django.http import JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

# DRF's error codes, renamed where FastAPI/pydantic has a well-known name for the same thing.
_TYPE_NAMES = {"required": "missing", "invalid": "value_error", "null": "value_error", "blank": "value_error"}


def error_body(detail) -> dict:
    """`{"detail": detail}`: a message, or a list of `validation_item`s."""
    return {"detail": detail}


def validation_item(loc: list, msg: str, type_: str = "value_error") -> dict:
    """One entry of a 422's `detail` list: where (`["body", "name"]`), what, and pydantic's type name."""
    return {"loc": list(loc), "msg": msg, "type": type_}


def flatten_errors(errors, loc: list) -> list[dict]:
    """Turn DRF's nested serializer errors into FastAPI's flat list, each located under `loc`."""
    if isinstance(errors, dict):
        flat = []
        for key, value in errors.items():
            flat += flatten_errors(value, loc if key == "non_field_errors" else [*loc, key])
        return flat
    if isinstance(errors, list):
        if all(isinstance(item, (str, drf.ErrorDetail)) for item in errors):
            return [_drf_item(item, loc) for item in errors]
        flat = []
        for index, item in enumerate(errors):
            if item:
                flat += flatten_errors(item, [*loc, index])
        return flat
    return [_drf_item(errors, loc)]


def _drf_item(item, loc: list) -> dict:
    code = getattr(item, "code", None) or "value_error"
    return validation_item(loc, str(item), _TYPE_NAMES.get(code, code))


def api_error_response(status: int, detail, *, headers: dict | None = None) -> Response:
    """A DRF view's error response."""
    return Response(error_body(detail), status=status, headers=headers)


def validation_error_response(errors: list[dict]) -> Response:
    """A DRF view's 422, `errors` being `validation_item`s."""
    return api_error_response(422, errors)


def error_response(status: int, detail, *, headers: dict | None = None) -> JsonResponse:
    """The same body from middleware or a plain Django view."""
    return JsonResponse(error_body(detail), status=status, headers=headers)


def error_json(detail) -> bytes:
    """The body as bytes, for code that writes HTTP itself (encoded as `error_response` encodes it)."""
    return json.dumps(error_body(detail)).encode()

"""Schemathesis hooks for tests/test_schema_fuzz.py, loaded in the schemathesis process (SCHEMATHESIS_HOOKS)."""

from __future__ import annotations

import os

import jsonschema
import schemathesis

# Source tarballs are opaque bytes to the client.
schemathesis.serializer.alias("application/gzip", "application/octet-stream")


def _reaches_the_operation(case) -> bool:
    """Whether the request names this operation: its method, and path values its route accepts.

    An id that is no UUID never matches a `<uuid:...>` route, so Django answers 404 before any view
    (and its authentication) runs; a method the path does not offer is a 405.
    """
    if case.method.upper() != case.operation.method.upper():
        return False
    for parameter in case.operation.path_parameters:
        schema = parameter.definition.get("schema", {})
        value = (case.path_parameters or {}).get(parameter.name)
        validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
        if not isinstance(value, str) or not validator.is_valid(value):
            return False
    return True


@schemathesis.check
def refused_without_credentials(ctx, response, case):
    """In the pass without credentials: every operation the schema secures answers 401."""
    if os.environ.get("SCHEMA_FUZZ_WITHOUT_CREDENTIALS") != "1":
        return None
    secured = bool(case.operation.definition.raw.get("security"))
    if secured and _reaches_the_operation(case) and response.status_code != 401:
        raise AssertionError(f"{case.method} {case.path} is declared secured but answered "
                             f"{response.status_code} without credentials")
    return None


def _holds_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


@schemathesis.hook
def filter_body(ctx, body) -> bool:
    """No NUL anywhere in a JSON body: the service refuses it everywhere (core/json_input.py, docs/reliability.md),
    which JSON Schema cannot say of free-form values (metadata, config) or of the keys an open object admits."""
    return not _holds_nul(body)

"""Serializer building blocks shared by the REST APIs."""

from __future__ import annotations

from rest_framework import serializers

from core.exceptions import RequestValidationError
from core.rest_errors import flatten_errors


def validated(serializer_class, data) -> dict:
    """`data` validated by `serializer_class`; invalid data raises DRF's ValidationError, which
    core.exception_handler answers in the API's error shape."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def validated_query(serializer_class, params) -> dict:
    """Query parameters validated by `serializer_class`; errors are a 422 located at ["query", name]."""
    serializer = serializer_class(data=params)
    if not serializer.is_valid():
        raise RequestValidationError(flatten_errors(serializer.errors, ["query"]))
    return serializer.validated_data


class StrictSerializer(serializers.Serializer):
    # This docstring is the OpenAPI description of every component built on the class (exports' inputs, where
    # an unknown key would be a setting of the S3 client nobody checked).
    """Unknown keys are a 422 (`extra_forbidden`), not silently ignored: they configure egress."""

    forbids_unknown_keys = True  # the schema says `additionalProperties: false` (core.openapi)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: [serializers.ErrorDetail("Extra inputs are not permitted", code="extra_forbidden")]
                     for key in unknown})
        return super().to_internal_value(data)

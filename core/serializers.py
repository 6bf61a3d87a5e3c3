"""Serializer building blocks shared by the REST APIs."""

from __future__ import annotations

from rest_framework import serializers


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

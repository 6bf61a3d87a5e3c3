from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Service core"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        # Each app registers its background job handlers and periodic jobs in `<app>/jobs.py`.
        autodiscover_modules("jobs")
        _text_fields_take_only_text()
        _boolean_fields_take_only_booleans()


def _text_fields_take_only_text() -> None:
    """DRF's CharField turns a JSON number into its text; the schema (and every client made from it)
    says string, so a number is refused like any other wrong type (422, pydantic's `string_type`)."""
    from rest_framework import serializers

    to_internal_value = serializers.CharField.to_internal_value

    def text_only(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Input should be a valid string", code="string_type")
        return to_internal_value(self, data)

    serializers.CharField.to_internal_value = text_only


def _boolean_fields_take_only_booleans() -> None:
    """DRF's BooleanField also takes 0, 1, "yes", "off"...; the schema says boolean. No query parameter is
    a BooleanField, so only JSON bodies reach it, where true and false are the booleans."""
    from rest_framework import serializers

    to_internal_value = serializers.BooleanField.to_internal_value

    def booleans_only(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Input should be a valid boolean", code="bool_type")
        return to_internal_value(self, data)

    serializers.BooleanField.to_internal_value = booleans_only

from __future__ import annotations

from typing import Any

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

    _refuse_other_types(serializers.CharField, str, "Input should be a valid string", "string_type")


def _boolean_fields_take_only_booleans() -> None:
    """DRF's BooleanField also takes 0, 1, "yes", "off"...; the schema says boolean. In a JSON body true and
    false are the booleans; a query parameter is text, read first by core.serializers.QueryBooleanField."""
    from rest_framework import serializers

    _refuse_other_types(serializers.BooleanField, bool, "Input should be a valid boolean", "bool_type")


def _refuse_other_types(field_class: Any, accepted: type, message: str, code: str) -> None:
    """Patch `field_class` to refuse (422, pydantic's wording and `code`) any input that is not an `accepted`."""
    from rest_framework import serializers

    to_internal_value = field_class.to_internal_value

    def only_accepted(self, data):
        if not isinstance(data, accepted):
            raise serializers.ValidationError(message, code=code)
        return to_internal_value(self, data)

    field_class.to_internal_value = only_accepted  # a deliberate patch

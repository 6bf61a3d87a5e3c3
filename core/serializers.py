"""Serializer building blocks shared by the REST APIs."""

from __future__ import annotations

import copy

from rest_framework import serializers

from core.exceptions import RequestValidationError
from core.rest_errors import flatten_errors, validation_item


def validated(serializer_class, data) -> dict:
    """`data` validated by `serializer_class`; invalid data raises DRF's ValidationError, which
    core.exception_handler answers in the API's error shape."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def validated_query(serializer_class, params) -> dict:
    """Query parameters validated by `serializer_class`; errors are a 422 located at ["query", name]."""
    serializer = serializer_class(data=params)
    _refuse_empty_numbers(serializer, params)
    if not serializer.is_valid():
        raise RequestValidationError(flatten_errors(serializer.errors, ["query"]))
    return serializer.validated_data


# Query parameters whose empty value (`?limit=`) is no value of their type. DRF reads a query string as a form, where
# an empty optional field takes its default; FastAPI (the APIs we answer for) refuses it with pydantic's 422.
_EMPTY_REFUSED = (
    (serializers.BooleanField, "Input should be a valid boolean, unable to interpret input", "bool_parsing"),
    (serializers.IntegerField, "Input should be a valid integer, unable to parse string as an integer",
     "int_parsing"),
    ((serializers.FloatField, serializers.DecimalField),
     "Input should be a valid number, unable to parse string as a number", "float_parsing"),
)


def _refuse_empty_numbers(serializer, params) -> None:
    errors = []
    for name, field in serializer.fields.items():
        if name not in params or params.get(name) != "":
            continue
        for kind, message, type_ in _EMPTY_REFUSED:
            if isinstance(field, kind):
                errors.append(validation_item(["query", name], message, type_))
                break
    if errors:
        raise RequestValidationError(errors)


# The words a query parameter may spell a boolean with: pydantic's, which FastAPI (LangSmith's server) applies.
_QUERY_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_QUERY_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


class QueryBooleanField(serializers.BooleanField):
    """A boolean query parameter (`?force=true`): text read as FastAPI reads it, case-insensitively."""

    def to_internal_value(self, data):
        if isinstance(data, bool):  # DRF's own value for a parameter not given (`default_empty_html`)
            return super().to_internal_value(data)
        word = data.strip().lower() if isinstance(data, str) else data
        if word in _QUERY_TRUE or word in _QUERY_FALSE:
            return super().to_internal_value(word in _QUERY_TRUE)
        raise serializers.ValidationError("Input should be a valid boolean, unable to interpret input",
                                          code="bool_parsing")


# What a copy must not share with its prototype: the containers code may change in place on one serializer's field.
_MUTABLE = (list, dict, set)


class CachedFieldsMixin:
    # No docstring, here or on CachedFieldsSerializer: drf-spectacular would take it as the OpenAPI description of
    # every component built on them that has none of its own.
    #
    # Build the declared fields once per class; each serializer instance gets shallow copies of them. DRF
    # deep-copies every declared field for every serializer instance (`Serializer.get_fields`), and a field's deep
    # copy runs its `__init__` again (validators, error messages, choices), nested serializers and list children
    # included: about 0.4 ms for a destination's input and output. Here the class keeps one unbound copy of its
    # declared fields (the prototypes, made by DRF's own deep copy and never bound or used), and an instance gets a
    # copy of each prototype's attributes: what DRF's deep copy gives, minus the second `__init__`. A copy shares
    # nothing an instance may change in place: its validators, error messages, style and mutable defaults are
    # copies, a `child` field is copied and its parent is the copy, and a nested serializer builds its own fields
    # when first used (from prototypes too when its class has this mixin). Only for serializers whose fields are
    # the declared ones (not ModelSerializer, which builds them from the model).

    _declared_fields: dict[str, serializers.Field]

    def get_fields(self) -> dict[str, serializers.Field]:
        cls = type(self)
        prototypes = cls.__dict__.get("_field_prototypes")  # the class's own, not a parent's
        if prototypes is None:
            prototypes = {name: FieldPrototype(field) for name, field in copy.deepcopy(cls._declared_fields).items()}
            cls._field_prototypes = prototypes  # type: ignore[attr-defined]
        return {name: prototype.copy() for name, prototype in prototypes.items()}


class FieldPrototype:
    """An unbound field and what copying it takes (worked out once): which attributes to copy, its child's copy."""

    def __init__(self, field: serializers.Field):
        assert "fields" not in field.__dict__, "a prototype serializer must not have bound its fields"
        self.field = field
        self.mutable = tuple(name for name, value in vars(field).items() if isinstance(value, _MUTABLE))
        self.default_is_mutable = isinstance(getattr(field, "default", None), _MUTABLE)
        child = getattr(field, "child", None)  # ListField, DictField, ListSerializer
        self.child = FieldPrototype(child) if isinstance(child, serializers.Field) else None

    def copy(self) -> serializers.Field:
        field = object.__new__(type(self.field))
        state = self.field.__dict__.copy()
        for name in self.mutable:
            state[name] = state[name].copy()
        if self.default_is_mutable:
            state["default"] = copy.deepcopy(self.field.default)
        if self.child is not None:
            # The prototype's child is bound already (its field name, source and label are ""): only its parent
            # differs.
            child = self.child.copy()
            child.parent = field  # type: ignore[assignment]  # a ListField's child's parent is a field
            state["child"] = child
        field.__dict__.update(state)
        return field


class CachedFieldsSerializer(CachedFieldsMixin, serializers.Serializer):
    pass  # a plain serializer whose declared fields are built once per class (CachedFieldsMixin)


class StrictSerializer(CachedFieldsSerializer):
    # This docstring is the OpenAPI description of every component built on the class (exports' inputs, where
    # an unknown key would be a setting of the S3 client nobody checked).
    """Unknown keys are a 422 (`extra_forbidden`), not silently ignored: they configure egress."""

    forbids_unknown_keys = True  # the schema says `additionalProperties: false` (core.openapi_generation)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: [serializers.ErrorDetail("Extra inputs are not permitted", code="extra_forbidden")]
                     for key in unknown})
        return super().to_internal_value(data)

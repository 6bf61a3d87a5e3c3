"""Serializers whose declared fields are built once per class (core.serializers.CachedFieldsMixin) behave like DRF's."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from rest_framework import serializers

from core.serializers import CachedFieldsMixin, CachedFieldsSerializer
from exports.destinations.api import DestinationCreateApi, DestinationCredentialsUpdateApi, DestinationOutputSerializer
from exports.destinations.models import Destination

CONFIG = {"bucket_name": "my-bucket", "prefix": "/exports/", "endpoint_url": "https://s3.example.com/"}
CREDENTIALS = {"access_key_id": "AKIA0000", "secret_access_key": "secret"}
BODIES = [
    {"display_name": "ok", "config": CONFIG, "credentials": CREDENTIALS},
    {"display_name": "ok", "config": {**CONFIG, "config_kwargs_s3": {"addressing_style": "path"},
                                      "s3_additional_kwargs": {"ServerSideEncryption": "AES256"}},
     "credentials": CREDENTIALS, "destination_type": None},
    {},
    {"display_name": "bad/name!", "config": {"bucket_name": "A", "surprise": 1}, "credentials": {"x": 1}},
    {"display_name": "x", "config": {**CONFIG, "endpoint_url": "ftp://u@h", "region": "1"}, "credentials": None,
     "aws_role_arn": "arn:aws:iam::1:role/x"},
    {"display_name": "x", "config": {**CONFIG, "include_bucket_in_prefix": False,
                                     "config_kwargs_s3": {"addressing_style": "virtual", "other": True}}},
    {"display_name": "x", "config": ["not", "an", "object"], "credentials": "nope"},
    {"display_name": "x" * 300, "config": {"bucket_name": None, "prefix": "a\x00b"}, "credentials": {}},
]


def drf_own_copies(monkeypatch) -> None:
    """Make every CachedFieldsMixin serializer deep-copy its declared fields per instance, as DRF does."""
    monkeypatch.setattr(CachedFieldsMixin, "get_fields", serializers.Serializer.get_fields)


def outcome(serializer: serializers.Serializer):
    return (serializer.validated_data, None) if serializer.is_valid() else (None, serializer.errors)


@pytest.mark.parametrize("body", BODIES)
def test_validation_gives_what_drfs_own_field_copies_give(body, monkeypatch):
    cached = outcome(DestinationCreateApi.InputSerializer(data=body))
    patch = outcome(DestinationCredentialsUpdateApi.InputSerializer(data=body))
    drf_own_copies(monkeypatch)
    assert cached == outcome(DestinationCreateApi.InputSerializer(data=body))
    assert patch == outcome(DestinationCredentialsUpdateApi.InputSerializer(data=body))


def test_the_output_is_what_drfs_own_field_copies_give(monkeypatch):
    now = datetime(2026, 3, 1, tzinfo=UTC)
    destination = Destination(id=uuid.uuid4(), workspace_id=uuid.uuid4(), display_name="d", created_at=now,
                              updated_at=now, credentials_keys=["access_key_id"],
                              config={"bucket_name": "b", "config_kwargs_s3": {"addressing_style": "path"}})
    cached = DestinationOutputSerializer(destination).data
    listed = DestinationOutputSerializer([destination, destination], many=True).data
    drf_own_copies(monkeypatch)
    assert cached == DestinationOutputSerializer(destination).data
    assert listed == DestinationOutputSerializer([destination, destination], many=True).data


def test_a_field_changed_on_one_serializer_is_unchanged_on_the_next():
    first = DestinationCreateApi.InputSerializer(data={})
    first.fields["display_name"].required = False
    first.fields["display_name"].validators.append(lambda value: None)
    first.fields["display_name"].error_messages["blank"] = "changed"
    first.fields["config"].fields["bucket_name"].style["changed"] = True
    second = DestinationCreateApi.InputSerializer(data={})
    assert second.fields["display_name"].required is True
    assert len(second.fields["display_name"].validators) == len(first.fields["display_name"].validators) - 1
    assert second.fields["display_name"].error_messages["blank"] != "changed"
    assert "changed" not in second.fields["config"].fields["bucket_name"].style
    assert second.fields["display_name"] is not first.fields["display_name"]


def test_nested_fields_and_list_children_belong_to_their_own_serializer():
    first = DestinationOutputSerializer(context={"caller": 1})
    second = DestinationOutputSerializer(context={"caller": 2})
    for serializer, caller in ((first, 1), (second, 2)):
        keys = serializer.fields["credentials_keys"]
        assert keys.parent is serializer and keys.child.parent is keys and keys.child.root is serializer
        nested = serializer.fields["config"].fields["config_kwargs_s3"].fields["addressing_style"]
        assert nested.root is serializer and nested.context == {"caller": caller}
        assert serializer.fields["config"].fields["s3_additional_kwargs"].child.root is serializer
    assert first.fields["config"] is not second.fields["config"]


def test_a_mutable_default_is_not_shared_between_serializers():
    class Tagged(CachedFieldsSerializer):
        tags = serializers.ListField(child=serializers.CharField(), default=[])

    first = Tagged(data={})
    assert first.is_valid()
    first.validated_data["tags"].append("leaked")
    second = Tagged(data={})
    assert second.is_valid() and second.validated_data["tags"] == []


def test_each_class_builds_its_own_fields_not_its_parents():
    class Parent(CachedFieldsSerializer):
        name = serializers.CharField()

    class Child(Parent):
        size = serializers.IntegerField()

    assert list(Parent().fields) == ["name"]
    assert list(Child().fields) == ["name", "size"]
    assert list(Parent().fields) == ["name"]

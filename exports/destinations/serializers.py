"""The S3 parts of the destinations API's shapes (LangSmith's BulkExportDestinationS3Config and
BotocoreS3Config …), nested by the input and output serializers of exports.destinations.api.

Credentials appear only in input serializers; no output serializer has a credential field, so
they are absent from every response and every response schema.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from botocore.exceptions import InvalidRegionError
from botocore.utils import validate_region_name
from rest_framework import serializers

from core.serializers import CachedFieldsSerializer, StrictSerializer
from exports.s3_clients import ADDRESSING_STYLES, US_EAST_1_ENDPOINTS

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IPV4_LIKE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def refuse_role_arn(serializer: serializers.Serializer, value: str | None) -> None:
    """`aws_role_arn` is in LangSmith's schemas but not supported here: only an empty value passes."""
    if value:
        raise serializers.ValidationError("aws_role_arn is not supported: give credentials instead.")
    return None


class ConfigKwargsS3Serializer(StrictSerializer):
    """The documented `BotocoreS3Config` keys, and only those (use_accelerate_endpoint is not offered)."""

    addressing_style = serializers.ChoiceField(choices=ADDRESSING_STYLES, required=False, allow_null=True)
    payload_signing_enabled = serializers.BooleanField(required=False, allow_null=True)
    us_east_1_regional_endpoint = serializers.ChoiceField(choices=US_EAST_1_ENDPOINTS, required=False,
                                                          allow_null=True)

    class Meta:
        ref_name = "BotocoreS3Config"


class S3AdditionalKwargsSerializer(StrictSerializer):
    """Extra PutObject arguments; only these (storage.PUT_EXTRA_ARGS) reach the client."""

    ServerSideEncryption = serializers.ChoiceField(choices=["AES256", "aws:kms", "aws:kms:dsse"], required=False)
    SSEKMSKeyId = serializers.CharField(max_length=2048, required=False)

    class Meta:
        ref_name = "S3AdditionalKwargs"


class S3ConfigInputSerializer(StrictSerializer):
    bucket_name = serializers.CharField(min_length=3, max_length=63)
    prefix = serializers.CharField(max_length=1024, allow_blank=True, allow_null=True, required=False, default="")
    region = serializers.RegexField(r"^[a-z0-9-]+$", max_length=64, required=False, allow_null=True)
    endpoint_url = serializers.CharField(max_length=2048, required=False, allow_null=True, allow_blank=True)
    include_bucket_in_prefix = serializers.BooleanField(required=False, allow_null=True, default=True)
    config_kwargs_s3 = ConfigKwargsS3Serializer(required=False, allow_null=True)
    s3_additional_kwargs = S3AdditionalKwargsSerializer(required=False, allow_null=True)
    aws_role_arn = serializers.CharField(required=False, allow_null=True, allow_blank=True)

    class Meta:
        ref_name = "BulkExportDestinationS3Config"

    def validate_bucket_name(self, value: str) -> str:
        if not _BUCKET.match(value) or ".." in value or ".-" in value or "-." in value or _IPV4_LIKE.match(value):
            raise serializers.ValidationError(
                "Bucket names have 3-63 lowercase letters, digits, dots and hyphens, start and end with a letter "
                "or digit, and are not formatted like an IP address.")
        return value

    def validate_region(self, value: str | None) -> str | None:
        # botocore has its own rule (a host label, not all digits) and refuses to build a client otherwise.
        try:
            validate_region_name(value or None)
        except InvalidRegionError:
            raise serializers.ValidationError(
                f"{value!r} is not a region name: use the bucket's AWS region (such as us-east-1), or the region "
                "your S3-compatible endpoint expects; up to 63 letters, digits and inner hyphens, not only "
                "digits.") from None
        return value

    def validate_prefix(self, value: str | None) -> str:
        value = value or ""
        if _CONTROL.search(value):
            raise serializers.ValidationError("The prefix may not contain control characters.")
        return value.strip("/")

    def validate_endpoint_url(self, value: str | None) -> str | None:
        if not value:
            return None
        parts = urlsplit(value)
        if _CONTROL.search(value) or " " in value or not value.isascii():
            raise serializers.ValidationError("The endpoint URL may not contain spaces or control characters.")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise serializers.ValidationError("The endpoint URL must be an http(s) URL with a host.")
        if "@" in parts.netloc or parts.query or parts.fragment:
            raise serializers.ValidationError("The endpoint URL may not contain user information, a query or a "
                                              "fragment.")
        return value.rstrip("/")

    validate_aws_role_arn = refuse_role_arn

    def validate(self, attrs: dict) -> dict:
        style = (attrs.get("config_kwargs_s3") or {}).get("addressing_style", "auto")
        if not attrs.get("endpoint_url") and not attrs.get("region"):
            raise serializers.ValidationError({"region": "region is required for AWS buckets (when endpoint_url is "
                                                         "omitted)."})
        if attrs.get("include_bucket_in_prefix") is False:
            if not attrs.get("endpoint_url"):
                raise serializers.ValidationError({"include_bucket_in_prefix": (
                    "include_bucket_in_prefix=false is for an endpoint_url that already names the bucket; "
                    "give that endpoint_url.")})
            if style == "virtual":
                raise serializers.ValidationError({"include_bucket_in_prefix": (
                    "include_bucket_in_prefix=false means the endpoint already names the bucket: it cannot be "
                    "combined with addressing_style=virtual.")})
        return normalise_config(attrs)


def normalise_config(attrs: dict) -> dict:
    """The stored form: every key present, defaults applied."""
    kwargs = {k: v for k, v in (attrs.get("config_kwargs_s3") or {"addressing_style": "auto"}).items()
              if v is not None}
    return {
        "bucket_name": attrs["bucket_name"],
        "prefix": attrs.get("prefix") or "",
        "region": attrs.get("region") or None,
        "endpoint_url": attrs.get("endpoint_url") or None,
        "include_bucket_in_prefix": attrs.get("include_bucket_in_prefix") is not False,
        "config_kwargs_s3": {"addressing_style": "auto", **kwargs},
        "s3_additional_kwargs": dict(attrs.get("s3_additional_kwargs") or {}),
    }


class S3CredentialsInputSerializer(StrictSerializer):
    access_key_id = serializers.CharField(min_length=1, max_length=255)
    secret_access_key = serializers.CharField(min_length=1, max_length=2048)
    session_token = serializers.CharField(max_length=2048, required=False, allow_null=True, allow_blank=True)

    class Meta:
        ref_name = "BulkExportDestinationS3Credentials"


class ConfigKwargsS3OutputSerializer(CachedFieldsSerializer):
    addressing_style = serializers.CharField()
    payload_signing_enabled = serializers.BooleanField(required=False)
    us_east_1_regional_endpoint = serializers.CharField(required=False)

    class Meta:
        ref_name = "BotocoreS3ConfigOut"


class S3ConfigOutputSerializer(CachedFieldsSerializer):
    bucket_name = serializers.CharField()
    prefix = serializers.CharField(allow_blank=True)
    region = serializers.CharField(allow_null=True)
    endpoint_url = serializers.CharField(allow_null=True)
    include_bucket_in_prefix = serializers.BooleanField()
    config_kwargs_s3 = ConfigKwargsS3OutputSerializer()
    s3_additional_kwargs = serializers.DictField(child=serializers.CharField())

    class Meta:
        ref_name = "BulkExportDestinationS3ConfigOut"

    def to_representation(self, instance: dict) -> dict:
        full = {"prefix": "", "region": None, "endpoint_url": None, "include_bucket_in_prefix": True,
                "config_kwargs_s3": {"addressing_style": "auto"}, "s3_additional_kwargs": {}, **instance}
        return super().to_representation(full)

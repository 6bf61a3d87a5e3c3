"""The S3 factory's clients share S3's model, client class and endpoint rules, and nothing that is per client."""

from __future__ import annotations

import boto3
import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from exports import s3_clients

pytestmark = pytest.mark.usefixtures("egress_loopback", "localhost_dns")

ALICE = {"access_key_id": "AKIAALICE00000000000", "secret_access_key": "alice-secret"}
BOB = {"access_key_id": "AKIABOB0000000000000", "secret_access_key": "bob-secret"}
CONFIGS = [
    {"bucket_name": "b1", "endpoint_url": "http://127.0.0.1:9", "config_kwargs_s3": {"addressing_style": "path"}},
    {"bucket_name": "b2", "endpoint_url": "http://localhost:9", "config_kwargs_s3": {"addressing_style": "virtual"}},
    {"bucket_name": "b3.with.dots", "region": "eu-west-1"},
    {"bucket_name": "b4", "region": "us-east-1", "config_kwargs_s3": {"us_east_1_regional_endpoint": "legacy"}},
    {"bucket_name": "b5", "region": "ap-southeast-2", "config_kwargs_s3": {"addressing_style": "path"}},
    {"bucket_name": "b6", "endpoint_url": "http://b6.localhost:9", "include_bucket_in_prefix": False},
]


def head_request(client, bucket: str) -> dict:
    """The URL and signing credential of a HeadObject, as the client would send it (nothing is sent)."""
    seen = {}

    def capture(params, request_signer, **kwargs):
        seen["url"] = params["url"]
        return AWSResponse(params["url"], 200, {}, None), {}

    client.meta.events.register("before-call.s3.HeadObject", capture)
    client.head_object(Bucket=bucket, Key="exports/file.parquet")
    seen["access_key"] = client._request_signer._credentials.access_key
    return seen


def plain_client(config: dict, credentials: dict):
    """What botocore builds on its own, with the factory's settings, from a session that shares nothing."""
    s3_config = s3_clients.S3Config.from_dict(config)
    return botocore.session.Session().create_client(
        "s3", endpoint_url=s3_config.endpoint_url, aws_access_key_id=credentials["access_key_id"],
        aws_secret_access_key=credentials["secret_access_key"],
        config=Config(region_name=s3_config.region or "us-east-1", signature_version="s3v4",
                      s3=s3_clients._s3_options(s3_config), ignore_configured_endpoint_urls=True))


def test_the_factorys_clients_share_the_model_class_and_endpoint_rules_but_each_signs_with_its_own_keys():
    first = s3_clients.s3_client(CONFIGS[0], ALICE)
    second = s3_clients.s3_client(CONFIGS[1], BOB)
    try:
        assert type(first.client) is type(second.client)
        assert first.client.meta.service_model is second.client.meta.service_model
        assert first.client._ruleset_resolver._provider is second.client._ruleset_resolver._provider
        assert first.client.meta.events is not second.client.meta.events
        assert head_request(first.client, "b1")["access_key"] == ALICE["access_key_id"]
        assert head_request(second.client, "b2")["access_key"] == BOB["access_key_id"]
    finally:
        first.close()
        second.close()


def test_clients_built_outside_the_factory_share_nothing_with_it_or_with_each_other():
    ours = s3_clients.s3_client(CONFIGS[0], ALICE)
    theirs = [boto3.session.Session().client("s3", region_name="us-east-1") for _ in range(2)]
    try:
        assert type(theirs[0]) is not type(theirs[1])
        assert theirs[0]._ruleset_resolver._provider is not theirs[1]._ruleset_resolver._provider
        assert theirs[0].meta.service_model is not ours.client.meta.service_model
        assert type(theirs[0]) is not type(ours.client)
    finally:
        ours.close()


@pytest.mark.parametrize("config", CONFIGS, ids=[c["bucket_name"] for c in CONFIGS])
def test_shared_endpoint_rules_resolve_every_destination_as_botocore_does_on_its_own(config):
    # Built after clients for the other destinations, so the rules' cache of resolved endpoints is warm.
    for other in CONFIGS:
        s3_clients.s3_client(other, ALICE).close()
    ours = s3_clients.s3_client(config, BOB)
    try:
        expected = head_request(plain_client(config, BOB), config["bucket_name"])
        assert head_request(ours.client, config["bucket_name"]) == expected
    finally:
        ours.close()

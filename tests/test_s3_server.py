"""The loopback S3 server fixture is real S3 over HTTP, with IAM enforcement on demand."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tests.support_s3 import allow

pytestmark = pytest.mark.no_postgres_pass


def test_objects_round_trip_over_http(s3):
    s3.create_bucket("fixture-bucket")
    client = s3.client()
    client.put_object(Bucket="fixture-bucket", Key="a.txt", Body=b"hello")
    assert client.get_object(Bucket="fixture-bucket", Key="a.txt")["Body"].read() == b"hello"


def test_each_test_starts_with_an_empty_server(s3):
    assert s3.client().list_buckets()["Buckets"] == []


def test_iam_enforcement_denies_what_a_policy_does_not_allow(s3):
    s3.create_bucket("fixture-bucket")
    put_only = s3.create_user("put-only", [allow(["s3:PutObject"], "fixture-bucket")])
    s3.set_auth_enforced(True)
    client = s3.client(credentials=put_only)
    client.put_object(Bucket="fixture-bucket", Key="a.txt", Body=b"x")
    with pytest.raises(ClientError) as denied:
        client.delete_object(Bucket="fixture-bucket", Key="a.txt")
    assert denied.value.response["Error"]["Code"] == "AccessDenied"

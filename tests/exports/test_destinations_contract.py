"""Issue 3's wire contract, point by point: config_kwargs_s3 keys, explicit nulls, the PATCH answer, messages."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command

from exports import s3_clients
from exports.destinations.models import Destination
from tests.exports.support_destinations import BUCKET, destination_body
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")
URL = "/api/v1/bulk-exports/destinations"


def test_config_kwargs_s3_takes_the_three_documented_keys(api_client, s3, writer):
    kwargs = {"addressing_style": "path", "payload_signing_enabled": True, "us_east_1_regional_endpoint": "regional"}
    response = api_client.post(URL, destination_body(s3.endpoint, writer, config_kwargs_s3=kwargs), format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["config"]["config_kwargs_s3"] == kwargs
    assert Destination.objects.get().config["config_kwargs_s3"] == kwargs


@pytest.mark.parametrize("key", ["use_accelerate_endpoint", "proxies", "signature_version", "retries"])
def test_any_other_config_kwargs_s3_key_is_422(api_client, key, connections):
    body = destination_body("http://h", {"access_key_id": "A", "secret_access_key": "s"},
                            config_kwargs_s3={"addressing_style": "path", key: True})
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "config", "config_kwargs_s3", key]
    assert connections == []


@pytest.mark.parametrize("value", ["both", True])
def test_us_east_1_regional_endpoint_is_regional_or_legacy(api_client, value):
    body = destination_body("http://h", {"access_key_id": "A", "secret_access_key": "s"},
                            config_kwargs_s3={"us_east_1_regional_endpoint": value})
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "config", "config_kwargs_s3", "us_east_1_regional_endpoint"]


def test_the_s3_options_reach_botocore(writer):
    client = s3_clients.s3_client({"bucket_name": BUCKET, "region": "us-east-1", "config_kwargs_s3": {
        "addressing_style": "virtual", "payload_signing_enabled": False, "us_east_1_regional_endpoint": "regional"}},
        writer.as_dict()).client
    assert client.meta.config.s3 == {"addressing_style": "virtual", "payload_signing_enabled": False,
                                     "us_east_1_regional_endpoint": "regional"}
    assert client.meta.endpoint_url == "https://s3.us-east-1.amazonaws.com"  # regional, not s3.amazonaws.com


def test_explicit_nulls_are_accepted_where_a_field_is_optional(api_client, s3, writer):
    body = {"destination_type": None, "display_name": "Nulls", "aws_role_arn": None,
            "config": {"bucket_name": BUCKET, "prefix": None, "region": None, "endpoint_url": s3.endpoint,
                       "include_bucket_in_prefix": None, "s3_additional_kwargs": None, "aws_role_arn": None,
                       "config_kwargs_s3": {"addressing_style": None, "payload_signing_enabled": None,
                                            "us_east_1_regional_endpoint": None}},
            "credentials": {**writer.as_dict(), "session_token": None}}
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["destination_type"] == "s3" and data["credentials_keys"] == ["access_key_id", "secret_access_key"]
    assert data["config"] == {"bucket_name": BUCKET, "prefix": "", "region": None, "endpoint_url": s3.endpoint,
                              "include_bucket_in_prefix": True, "config_kwargs_s3": {"addressing_style": "auto"},
                              "s3_additional_kwargs": {}}
    assert Destination.objects.get().config == data["config"]  # stored with the defaults filled in


@pytest.mark.parametrize("config", [{"bucket_name": BUCKET}, {"bucket_name": BUCKET, "region": None},
                                    {"bucket_name": BUCKET, "region": None, "endpoint_url": None},
                                    {"bucket_name": BUCKET, "endpoint_url": ""}])
def test_an_aws_bucket_without_endpoint_url_needs_a_region(api_client, config, connections):
    body = {"display_name": "aws", "config": config, "credentials": {"access_key_id": "A", "secret_access_key": "s"}}
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 422
    assert ["body", "config", "region"] in [error["loc"] for error in response.json()["detail"]]
    assert connections == []


def test_patch_answers_with_the_identity_and_the_credential_field_names_only(api_client, s3, bucket, writer):
    created = api_client.post(URL, destination_body(s3.endpoint, writer), format="json").json()
    successor = s3.create_user("successor", [allow(["s3:PutObject"], bucket)])
    response = api_client.patch(f"{URL}/{created['id']}", {"credentials": {**successor.as_dict(),
                                                                           "session_token": None}}, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert set(data) == {"id", "tenant_id", "created_at", "updated_at", "credentials_keys"}
    assert (data["id"], data["tenant_id"], data["created_at"]) == (created["id"], created["tenant_id"],
                                                                   created["created_at"])
    assert data["updated_at"] >= created["updated_at"]
    assert data["credentials_keys"] == ["access_key_id", "secret_access_key"]


def test_an_invalid_bucket_name_answer_names_the_addressing_style_fix(api_client, fake_http):
    server = fake_http("s3error:InvalidBucketName")
    response = api_client.post(URL, destination_body(server.endpoint, {"access_key_id": "A",
                                                                       "secret_access_key": "s"}), format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("Failed to validate S3 destination: InvalidBucketName")
    assert "addressing_style=virtual" in detail and "injected" not in detail


def test_the_admin_list_shows_the_region(admin_client, api_client, s3, writer):
    api_client.post(URL, destination_body(s3.endpoint, writer, region="eu-west-3"), format="json")
    page = admin_client.get("/admin/exports/destination/").content.decode()
    assert "eu-west-3" in page and "column-where" in page


def test_the_patch_response_schema_has_no_config(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    patch = schema["paths"]["/api/v1/bulk-exports/destinations/{destination_id}"]["patch"]
    ref = patch["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][ref]["properties"]) == {"id", "tenant_id", "created_at",
                                                                        "updated_at", "credentials_keys"}

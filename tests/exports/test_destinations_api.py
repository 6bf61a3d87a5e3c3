"""POST/GET/PATCH/DELETE /api/v1/bulk-exports/destinations against a real S3 server with IAM enforcement."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from exports.bulk_exports import services as export_services
from exports.destinations.models import CredentialVersion, Destination
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS, closed_port, destination_body, object_keys
from tests.exports.support_exports import unfinished_export
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")
URL = "/api/v1/bulk-exports/destinations"


def create(client, body):
    return client.post(URL, body, format="json")


def failure(response) -> str:
    assert response.status_code == 400, response.json()
    detail = response.json()["detail"]
    assert detail.startswith("Failed to validate S3 destination: ")
    return detail.removeprefix("Failed to validate S3 destination: ")


# --- create: the test write ------------------------------------------------------------------------


def test_a_destination_is_created_after_a_test_write_that_is_cleaned_up(api_client, s3, writer):
    s3.set_auth_enforced(True)
    response = create(api_client, destination_body(s3.endpoint, writer))
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"destination_type", "display_name", "config", "id", "tenant_id", "created_at",
                         "updated_at", "credentials_keys"}
    assert data["credentials_keys"] == ["access_key_id", "secret_access_key"]
    assert data["tenant_id"] == str(api_client.workspace.id)
    assert data["config"] == {"bucket_name": BUCKET, "prefix": "exports", "region": None, "endpoint_url": s3.endpoint,
                              "include_bucket_in_prefix": True, "config_kwargs_s3": {"addressing_style": "auto"},
                              "s3_additional_kwargs": {}}
    destination = Destination.objects.get(id=data["id"])
    assert destination.current_credentials.number == 1
    s3.set_auth_enforced(False)
    assert object_keys(s3) == []  # written, checked and deleted


def test_without_delete_permission_the_test_file_stays_under_tmp(api_client, s3, bucket):
    put_only = s3.create_user("put-only", [allow(["s3:PutObject"], bucket)])
    s3.set_auth_enforced(True)
    response = create(api_client, destination_body(s3.endpoint, put_only))
    assert response.status_code == 200, response.json()
    s3.set_auth_enforced(False)
    keys = object_keys(s3)
    assert len(keys) == 1 and keys[0].startswith("exports/tmp/") and keys[0].endswith(".txt")


def test_a_key_without_any_policy_is_access_denied(api_client, s3, bucket):
    nobody = s3.create_user("nobody")
    s3.set_auth_enforced(True)
    assert failure(create(api_client, destination_body(s3.endpoint, nobody))) == "Access denied"
    assert Destination.objects.count() == 0 and CredentialVersion.objects.count() == 0


def test_an_unknown_key_id_is_named(api_client, s3, bucket):
    s3.set_auth_enforced(True)
    body = destination_body(s3.endpoint, {"access_key_id": "AKIAUNKNOWNKEY000000", "secret_access_key": "x" * 40})
    assert failure(create(api_client, body)) == "Key ID you provided does not exist"


def test_a_wrong_secret_is_a_signature_mismatch(api_client, s3, writer):
    s3.set_auth_enforced(True)
    body = destination_body(s3.endpoint, {**writer.as_dict(), "secret_access_key": "not-the-secret"})
    assert failure(create(api_client, body)) == "The request signature does not match: check the secret access key"


def test_a_missing_bucket_is_not_valid(api_client, s3, bucket):
    # Allowed on the missing bucket, so that the answer is about the bucket, not the policy.
    user = s3.create_user("hopeful", [allow(WRITE_ACTIONS, "no-such-bucket")])
    s3.set_auth_enforced(True)
    body = destination_body(s3.endpoint, user, bucket="no-such-bucket")
    assert failure(create(api_client, body)) == "Bucket is not valid"


def test_sts_temporary_credentials_with_a_session_token_work(api_client, s3, bucket):
    user = s3.create_user("assumer", [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}])
    temporary = s3.assume_role(user, "exporter", [allow(WRITE_ACTIONS, bucket)])
    s3.set_auth_enforced(True)
    response = create(api_client, destination_body(s3.endpoint, temporary))
    assert response.status_code == 200, response.json()
    assert response.json()["credentials_keys"] == ["access_key_id", "secret_access_key", "session_token"]


def test_a_malformed_session_token_is_named(api_client, s3, bucket):
    user = s3.create_user("assumer", [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}])
    temporary = s3.assume_role(user, "exporter", [allow(WRITE_ACTIONS, bucket)])
    s3.set_auth_enforced(True)
    body = destination_body(s3.endpoint, {**temporary.as_dict(), "session_token": "bogus-token"})
    assert failure(create(api_client, body)) == "The session token is invalid"


def test_an_expired_session_token_is_named(api_client, fake_http):
    server = fake_http("s3error:ExpiredToken")
    body = destination_body(server.endpoint, {"access_key_id": "ASIAEXAMPLE", "secret_access_key": "s",
                                              "session_token": "t"})
    assert failure(create(api_client, body)) == "The session token has expired"


@pytest.mark.parametrize("behaviour", ["html", "redirect", "redirect307"])
def test_a_web_server_or_a_redirect_is_an_invalid_endpoint(api_client, fake_http, behaviour):
    server = fake_http(behaviour)
    body = destination_body(server.endpoint, {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "s"})
    assert failure(create(api_client, body)) == "Invalid endpoint"
    # Redirects are never followed: the only requests went to the configured endpoint.
    assert server.seen and all(method == "PUT" for method, _ in server.seen)


def test_a_closed_port_is_an_invalid_endpoint(api_client):
    body = destination_body(f"http://127.0.0.1:{closed_port()}", {"access_key_id": "A", "secret_access_key": "s"})
    assert failure(create(api_client, body)) == "Invalid endpoint"


def test_the_endpoints_own_error_text_is_never_reflected(api_client, fake_http):
    canary = "CANARY-REMOTE-TEXT-7f3a9c"
    server = fake_http("s3error:SomethingOdd" + canary, canary=canary)
    response = create(api_client, destination_body(server.endpoint, {"access_key_id": "A", "secret_access_key": "s"}))
    assert failure(response) == "Invalid endpoint"
    assert canary not in response.content.decode()


def test_a_huge_response_is_cut_off(api_client, fake_http):
    server = fake_http("huge")
    detail = failure(create(api_client, destination_body(server.endpoint, {"access_key_id": "A",
                                                                            "secret_access_key": "s"})))
    assert detail == "The response from 127.0.0.1 is too large or too slow."


def test_a_private_endpoint_is_refused_before_any_connection(api_client, connections, settings):
    settings.EGRESS_ALLOWLIST = []
    body = destination_body("http://10.0.0.5:9000", {"access_key_id": "A", "secret_access_key": "s"})
    assert failure(create(api_client, body)) == ("Refused to connect to 10.0.0.5: private address. An operator can "
                                                 "allow it by adding it to EGRESS_ALLOWLIST.")
    assert connections == []


# --- create: request validation --------------------------------------------------------------------


@pytest.mark.parametrize("config, loc", [
    ({"bucket_name": "ab"}, ["body", "config", "bucket_name"]),
    ({"bucket_name": "Upper_Case"}, ["body", "config", "bucket_name"]),
    ({"bucket_name": "192.168.1.1"}, ["body", "config", "bucket_name"]),
    ({"bucket_name": "a..b"}, ["body", "config", "bucket_name"]),
    ({"bucket_name": "ok-bucket", "endpoint_url": "ftp://x"}, ["body", "config", "endpoint_url"]),
    ({"bucket_name": "ok-bucket", "endpoint_url": "https://u@host"}, ["body", "config", "endpoint_url"]),
    ({"bucket_name": "ok-bucket"}, ["body", "config", "region"]),
    ({"bucket_name": "ok-bucket", "endpoint_url": "http://h", "config_kwargs_s3": {"proxies": {}}},
     ["body", "config", "config_kwargs_s3", "proxies"]),
    ({"bucket_name": "ok-bucket", "endpoint_url": "http://h", "config_kwargs_s3": {"addressing_style": "odd"}},
     ["body", "config", "config_kwargs_s3", "addressing_style"]),
    ({"bucket_name": "ok-bucket", "region": "us-east-1", "include_bucket_in_prefix": False},
     ["body", "config", "include_bucket_in_prefix"]),
    ({"bucket_name": "ok-bucket", "endpoint_url": "http://h", "aws_role_arn": "arn:aws:iam::1:role/x"},
     ["body", "config", "aws_role_arn"]),
])
def test_invalid_configurations_are_422_with_their_location(api_client, config, loc, connections):
    body = {"display_name": "x", "config": config, "credentials": {"access_key_id": "A", "secret_access_key": "s"}}
    response = create(api_client, body)
    assert response.status_code == 422, response.json()
    assert loc in [error["loc"] for error in response.json()["detail"]]
    assert connections == []


@pytest.mark.parametrize("region", ["0", "123", "-", "fips-", "eu-west-", "a" * 64])
@pytest.mark.parametrize("endpoint_url", [None, "http://h"], ids=["aws", "custom-endpoint"])
def test_a_region_botocore_rejects_gets_422(api_client, destination, region, endpoint_url, connections):
    body = {"display_name": "x", "credentials": {"access_key_id": "A", "secret_access_key": "s"},
            "config": {"bucket_name": "ok-bucket", "region": region, "endpoint_url": endpoint_url}}
    response = create(api_client, body)
    assert response.status_code == 422, response.json()
    assert response.json()["detail"][0]["loc"] == ["body", "config", "region"]
    assert "is not a region name" in response.json()["detail"][0]["msg"] or len(region) > 63
    assert connections == [] and Destination.objects.count() == 1
    response = api_client.patch(f"{URL}/{destination['id']}", {**body, "config": {"region": region}}, format="json")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "config"]


def test_a_display_name_outside_the_allowed_characters_is_422(api_client):
    body = destination_body("http://h", {"access_key_id": "A", "secret_access_key": "s"}, name="bad/name")
    assert create(api_client, body).status_code == 422


def test_omitted_credentials_need_ambient_credentials_enabled(api_client, settings):
    response = create(api_client, destination_body("http://127.0.0.1:9", None))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "credentials"]


def test_ambient_credentials_are_used_when_enabled(api_client, s3, bucket, settings, monkeypatch):
    settings.EXPORTS_ALLOW_AMBIENT_CREDENTIALS = True
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENT000000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ambient-secret")
    response = create(api_client, destination_body(s3.endpoint, None))
    assert response.status_code == 200, response.json()
    assert response.json()["credentials_keys"] == []
    assert Destination.objects.get().current_credentials_id is None


# --- read, isolation, permissions ------------------------------------------------------------------


@pytest.fixture
def destination(api_client, s3, writer):
    response = create(api_client, destination_body(s3.endpoint, writer))
    assert response.status_code == 200, response.json()
    return response.json()


def test_list_and_get_return_the_workspaces_destinations(api_client, destination):
    listed = api_client.get(URL)
    assert listed.status_code == 200 and listed.json() == [destination]
    assert api_client.get(f"{URL}/{destination['id']}").json() == destination


def test_another_workspaces_destination_is_404_like_a_missing_one(outsider_client, destination, s3, writer):
    for method in ("get", "patch", "delete"):
        response = getattr(outsider_client, method)(f"{URL}/{destination['id']}", {"credentials": writer.as_dict()},
                                                    format="json")
        assert response.status_code == 404 and response.json() == {"detail": "Destination not found"}
    assert outsider_client.get(URL).json() == []
    missing = outsider_client.get(f"{URL}/00000000-0000-0000-0000-000000000000")
    assert missing.json() == {"detail": "Destination not found"}


def test_reading_needs_bulk_exports_read_and_writing_needs_manage(make_client, workspace, destination, s3, writer):
    reader = make_client(workspace, permissions=["bulk-exports:read"])
    assert reader.get(URL).status_code == 200
    for response in (reader.post(URL, destination_body(s3.endpoint, writer), format="json"),
                     reader.patch(f"{URL}/{destination['id']}", {"credentials": writer.as_dict()}, format="json"),
                     reader.delete(f"{URL}/{destination['id']}")):
        assert response.status_code == 403
        assert response.json() == {"detail": "This API key lacks the 'bulk-exports:manage' permission."}
    stranger = make_client(workspace, permissions=["tracing:read"])
    assert stranger.get(URL).status_code == 403


def test_a_request_without_a_key_is_401(client):
    assert client.get(URL).status_code == 401


# --- PATCH: credential rotation ----------------------------------------------------------------------


def test_patch_rotates_credentials_after_a_test_write(api_client, destination, s3, bucket):
    successor = s3.create_user("successor", [allow(WRITE_ACTIONS, bucket)])
    s3.set_auth_enforced(True)
    response = api_client.patch(f"{URL}/{destination['id']}", {"credentials": successor.as_dict()}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["credentials_keys"] == ["access_key_id", "secret_access_key"]
    saved = Destination.objects.get(id=destination["id"])
    versions = list(saved.credential_versions.order_by("number").defer("secret"))
    assert [v.number for v in versions] == [1, 2] and saved.current_credentials_id == versions[1].id
    assert versions[0].retired_at is not None and versions[1].retired_at is None


def test_patch_with_a_read_only_key_is_400_and_changes_nothing(api_client, destination, s3, bucket):
    reader = s3.create_user("reader", [allow(["s3:GetObject", "s3:ListBucket"], bucket)])
    s3.set_auth_enforced(True)
    before = Destination.objects.get(id=destination["id"])
    response = api_client.patch(f"{URL}/{destination['id']}", {"credentials": reader.as_dict()}, format="json")
    assert failure(response) == "Access denied"
    after = Destination.objects.get(id=destination["id"])
    assert after.current_credentials_id == before.current_credentials_id
    assert after.credentials_revision == before.credentials_revision
    assert CredentialVersion.objects.filter(destination=after).count() == 1


@pytest.mark.parametrize("body", [{}, {"credentials": {"access_key_id": "A"}}, {"credentials": None},
                                  {"credentials": {"access_key_id": "A", "secret_access_key": "s"},
                                   "config": {"bucket_name": "other"}}])
def test_patch_with_partial_or_extra_fields_is_422(api_client, destination, body):
    response = api_client.patch(f"{URL}/{destination['id']}", body, format="json")
    assert response.status_code == 422, response.json()
    assert CredentialVersion.objects.count() == 1


def test_a_losing_concurrent_patch_is_409_and_stores_nothing(api_client, destination, s3, bucket, monkeypatch):
    from exports.destinations import services

    successor = s3.create_user("successor", [allow(WRITE_ACTIONS, bucket)])
    real_validate = services._validate

    def validate_while_someone_else_rotates(**kwargs):
        result = real_validate(**kwargs)
        Destination.objects.filter(id=destination["id"]).update(credentials_revision=99)
        return result

    monkeypatch.setattr(services, "_validate", validate_while_someone_else_rotates)
    response = api_client.patch(f"{URL}/{destination['id']}", {"credentials": successor.as_dict()}, format="json")
    assert response.status_code == 409
    assert CredentialVersion.objects.count() == 1


# --- DELETE ----------------------------------------------------------------------------------------


def test_delete_hides_the_destination_and_retires_its_credentials(api_client, destination):
    assert api_client.delete(f"{URL}/{destination['id']}").status_code == 204
    assert api_client.get(f"{URL}/{destination['id']}").status_code == 404
    assert api_client.get(URL).json() == []
    assert CredentialVersion.objects.get().retired_at is not None


def test_delete_is_409_while_an_unfinished_export_uses_the_destination(api_client, workspace, destination):
    export = unfinished_export(workspace, destination["id"])
    response = api_client.delete(f"{URL}/{destination['id']}")
    assert response.status_code == 409
    assert "not finished" in response.json()["detail"]
    assert api_client.get(f"{URL}/{destination['id']}").status_code == 200
    export_services.export_cancel(export=export)
    assert api_client.delete(f"{URL}/{destination['id']}").status_code == 204


# --- rate limit ------------------------------------------------------------------------------------


def test_validation_is_rate_limited_per_workspace_with_no_outbound_traffic(api_client, settings, connections,
                                                                          s3, writer):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "destination-validation": "2/min"}
    body = destination_body(s3.endpoint, writer)
    assert create(api_client, body).status_code == 200
    assert create(api_client, body).status_code == 200
    before = len(connections)
    response = create(api_client, body)
    assert response.status_code == 429 and "Retry-After" in response
    assert len(connections) == before
    assert Destination.objects.count() == 2


def test_only_requests_that_reach_the_test_write_count_and_a_malformed_body_is_422_when_the_budget_is_spent(
        api_client, settings, connections, s3, writer):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "destination-validation": "1/min"}
    malformed = destination_body(s3.endpoint, writer, bucket="Not A Bucket")
    assert [create(api_client, malformed).status_code for _ in range(3)] == [422, 422, 422]
    created = create(api_client, destination_body(s3.endpoint, writer))
    assert created.status_code == 200  # the malformed bodies used none of the budget: this is its one test write
    before = len(connections)
    assert create(api_client, destination_body(s3.endpoint, writer)).status_code == 429
    assert create(api_client, malformed).status_code == 422
    url = f"{URL}/{created.json()['id']}"
    assert api_client.patch(url, {"credentials": {"access_key_id": "A"}}, format="json").status_code == 422
    assert api_client.patch(f"{URL}/{uuid.uuid4()}", {"credentials": writer.as_dict()},
                            format="json").status_code == 404
    refused = api_client.patch(url, {"credentials": writer.as_dict()}, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "Too many destination validations" in refused.json()["detail"]
    assert len(connections) == before


def test_credentials_are_stored_encrypted(api_client, destination, writer):
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM exports_credentialversion")
        stored = cursor.fetchone()[0]
    assert writer.secret_access_key not in stored and writer.access_key_id not in stored


def test_deleting_a_workspace_deletes_its_destinations_and_credentials(api_client, destination, workspace):
    workspace.delete()
    assert Destination.objects.count() == 0 and CredentialVersion.objects.count() == 0


def test_no_response_schema_of_the_destinations_api_has_a_credential_field():
    from core.openapi_generation import ServiceSchemaGenerator

    schema = ServiceSchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]

    def expand(node, seen=()):
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                return "" if name in seen else expand(components[name], (*seen, name))
            return " ".join(f"{key} {expand(value, seen)}" for key, value in node.items())
        if isinstance(node, list):
            return " ".join(expand(item, seen) for item in node)
        return str(node)

    operations = [op for path, item in schema["paths"].items() if "bulk-exports/destinations" in path
                  for op in item.values()]
    assert len(operations) == 5
    for operation in operations:
        responses = expand(operation["responses"])
        if operation["operationId"] != "delete_bulk_export_destination":
            assert "credentials_keys " in responses  # the expansion does reach the fields
        for secret_field in ("secret_access_key ", "session_token ", "access_key_id ", "credentials "):
            assert secret_field not in responses, operation["operationId"]

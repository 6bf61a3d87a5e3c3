"""The destinations admin: same validation and messages as the API, credentials never rendered."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from exports.bulk_exports import services as export_services
from exports.destinations.models import CredentialVersion, Destination
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS, destination_body, object_keys
from tests.exports.support_exports import unfinished_export
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")
ADD = "/admin/exports/destination/add/"
CHANGELIST = "/admin/exports/destination/"


def add_form(workspace, endpoint, credentials, **overrides) -> dict:
    data = {"workspace": str(workspace.id), "display_name": "From the admin", "bucket_name": BUCKET,
            "prefix": "exports", "region": "", "endpoint_url": endpoint, "include_bucket_in_prefix": "on",
            "addressing_style": "auto", "session_token": "", **credentials.as_dict()}
    data.update(overrides)
    return data


def errors_of(response) -> str:
    return " ".join(re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode(), re.S))


@pytest.fixture
def destination(api_client, s3, writer):
    response = api_client.post("/api/v1/bulk-exports/destinations", destination_body(s3.endpoint, writer),
                               format="json")
    return Destination.objects.get(id=response.json()["id"])


def test_the_add_form_has_empty_password_inputs_for_credentials(admin_client):
    page = admin_client.get(ADD).content.decode()
    for name in ("access_key_id", "secret_access_key", "session_token"):
        tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page).group(0)
        assert 'type="password"' in tag and "value=" not in tag


def test_the_add_form_creates_a_destination_after_the_test_write(admin_client, workspace, s3, writer):
    response = admin_client.post(ADD, add_form(workspace, s3.endpoint, writer))
    assert response.status_code == 302, errors_of(response)
    destination = Destination.objects.get()
    assert destination.workspace == workspace and destination.config["bucket_name"] == BUCKET
    assert destination.credentials_keys == ["access_key_id", "secret_access_key"]
    assert object_keys(s3) == []


def test_a_failing_test_write_is_a_form_error_and_nothing_is_rendered_back(admin_client, workspace, s3, bucket):
    nobody = s3.create_user("nobody")
    s3.set_auth_enforced(True)
    response = admin_client.post(ADD, add_form(workspace, s3.endpoint, nobody))
    assert response.status_code == 200
    assert "Failed to validate S3 destination: Access denied" in errors_of(response)
    page = response.content.decode()
    assert nobody.secret_access_key not in page and nobody.access_key_id not in page
    assert Destination.objects.count() == 0


def test_invalid_configuration_shows_the_apis_messages_on_the_fields(admin_client, workspace, s3, writer):
    response = admin_client.post(ADD, add_form(workspace, s3.endpoint, writer, bucket_name="Bad_Bucket"))
    assert "Bucket names have 3-63 lowercase letters" in errors_of(response)
    assert Destination.objects.count() == 0


def test_the_rotation_page_rotates_credentials_with_patchs_rules(admin_client, destination, s3, bucket):
    url = f"{CHANGELIST}{destination.id}/change/rotate-credentials/"
    page = admin_client.get(url).content.decode()
    assert "test write" in page and "runs already in flight keep the credentials" in page
    for name, label in (("access_key_id", "Access key ID"), ("secret_access_key", "Secret access key")):
        assert re.search(rf'<label for="id_{name}" class="required">{label}:</label>', page)
    reader = s3.create_user("reader", [allow(["s3:GetObject"], bucket)])
    successor = s3.create_user("successor", [allow(WRITE_ACTIONS, bucket)])
    s3.set_auth_enforced(True)
    refused = admin_client.post(url, {**reader.as_dict(), "session_token": ""})
    assert "Failed to validate S3 destination: Access denied" in refused.content.decode()
    assert reader.secret_access_key not in refused.content.decode()
    assert CredentialVersion.objects.count() == 1
    blank = admin_client.post(url, {"access_key_id": "", "secret_access_key": "", "session_token": ""})
    assert blank.content.decode().count("This field is required.") == 2
    accepted = admin_client.post(url, {**successor.as_dict(), "session_token": ""}, follow=True)
    assert "rotated to revision 2" in accepted.content.decode()
    destination.refresh_from_db()
    assert destination.credentials_revision == 2 and CredentialVersion.objects.count() == 2


def test_saving_the_change_page_keeps_the_credentials_and_says_so(admin_client, destination):
    url = f"{CHANGELIST}{destination.id}/change/"
    page = admin_client.get(url).content.decode()
    assert "revision 1: access_key_id, secret_access_key" in page and 'type="password"' not in page
    response = admin_client.post(url, {"_save": "Save"}, follow=True)
    text = response.content.decode()
    assert "Nothing was changed" in text and "changed successfully" not in text
    destination.refresh_from_db()
    assert destination.credentials_revision == 1 and CredentialVersion.objects.count() == 1


def test_validate_again_reports_success_and_failure(admin_client, destination, s3):
    response = admin_client.post(CHANGELIST, {"action": "validate_again", "_selected_action": [destination.id]},
                                 follow=True)
    assert "the test write succeeded" in response.content.decode()
    s3.client().delete_bucket(Bucket=BUCKET)
    response = admin_client.post(CHANGELIST, {"action": "validate_again", "_selected_action": [destination.id]},
                                 follow=True)
    assert "Failed to validate S3 destination: Bucket is not valid" in response.content.decode()


def test_validate_again_with_undecryptable_credentials_says_so_without_breaking_pages(admin_client, destination):
    pk = CredentialVersion._meta.pk.get_db_prep_value(destination.current_credentials_id, connection)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE exports_credentialversion SET secret = %s WHERE id = %s", ["gAAAAAbroken", pk])
    response = admin_client.post(CHANGELIST, {"action": "validate_again", "_selected_action": [destination.id]},
                                 follow=True)
    assert "cannot be read" in response.content.decode()
    assert admin_client.get(f"{CHANGELIST}{destination.id}/change/").status_code == 200
    assert admin_client.get("/admin/exports/credentialversion/").status_code == 200


def test_the_admin_shares_the_validation_rate_limit_and_sends_nothing_when_over_it(
        admin_client, destination, settings, connections):
    # Two per minute: the API call that created the destination was the first (same scope, same workspace).
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "destination-validation": "2/min"}
    first = admin_client.post(CHANGELIST, {"action": "validate_again", "_selected_action": [destination.id]},
                              follow=True)
    assert "the test write succeeded" in first.content.decode()
    before = len(connections)
    second = admin_client.post(CHANGELIST, {"action": "validate_again", "_selected_action": [destination.id]},
                               follow=True)
    assert "Too many destination validations in this workspace" in second.content.decode()
    assert len(connections) == before


def test_the_admin_shows_field_errors_even_when_the_test_write_budget_is_spent(admin_client, workspace, destination,
                                                                              s3, writer, settings):
    # One per minute: the API call that created the destination spent it (same scope, same workspace).
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "destination-validation": "1/min"}
    malformed = admin_client.post(ADD, add_form(workspace, s3.endpoint, writer, bucket_name="Bad_Bucket"))
    assert "Bucket names have 3-63 lowercase letters" in errors_of(malformed)
    assert "Too many" not in errors_of(malformed)
    refused = admin_client.post(ADD, add_form(workspace, s3.endpoint, writer))
    assert "Too many destination validations in this workspace" in errors_of(refused)
    assert Destination.objects.count() == 1


def test_deleting_from_the_admin_goes_through_the_service(admin_client, workspace, destination):
    export = unfinished_export(workspace, destination.id)
    response = admin_client.post(CHANGELIST, {"action": "delete_destinations", "_selected_action": [destination.id]},
                                 follow=True)
    assert "has not finished" in response.content.decode()
    export_services.export_cancel(export=export)
    admin_client.post(CHANGELIST, {"action": "delete_destinations", "_selected_action": [destination.id]})
    destination.refresh_from_db()
    assert destination.deleted_at is not None

"""Credentials: never shown, never logged, encrypted and bound at rest, failing closed, rotatable, purged."""

from __future__ import annotations

import json
import logging
import secrets
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import connection
from encrypted_model_fields import fields as encrypted

from core.registry import PERIODICS
from exports import logredact
from exports.bulk_exports import services as export_services
from exports.destinations import services
from exports.destinations.models import CredentialVersion, Destination
from exports.destinations.selectors import CredentialsUnreadable, credential_version_credentials
from tests.exports.support_destinations import destination_body
from tests.exports.support_exports import unfinished_export
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")
URL = "/api/v1/bulk-exports/destinations"


def canary(label: str) -> str:
    return f"CANARY{label}{secrets.token_hex(12)}"


@pytest.fixture
def canaries():
    return {"access_key_id": "AKIA" + canary("K").upper(), "secret_access_key": canary("S"),
            "session_token": canary("T")}


@pytest.fixture
def debug_logging():
    """The S3 client loggers at DEBUG, as an operator chasing a problem might set them."""
    names = ["botocore", "urllib3", "s3transfer", "boto3", "exports", "core", "moto"]
    previous = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    # moto plays the remote S3 service here; what it logs about the requests it receives is not ours.
    logging.getLogger("moto").setLevel(logging.WARNING)
    yield
    for name, level in previous.items():
        logging.getLogger(name).setLevel(level)


def raw_secret_column() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM exports_credentialversion ORDER BY number")
        return [row[0] for row in cursor.fetchall()]


def tamper(version_id, value: str) -> None:
    """Write `value` as the stored ciphertext, bypassing the field's encryption."""
    pk = CredentialVersion._meta.pk.get_db_prep_value(version_id, connection)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE exports_credentialversion SET secret = %s WHERE id = %s", [value, pk])


# --- the canary sweep --------------------------------------------------------------------------------


def test_no_credential_value_appears_in_any_response_log_or_admin_page(
        api_client, outsider_client, admin_client, s3, bucket, canaries, fake_http, caplog, capfd, debug_logging):
    caplog.set_level(logging.DEBUG)
    responses = []
    successor = {k: canary("N" + k[:1]) if k != "access_key_id" else "AKIA" + canary("NK").upper()
                 for k in canaries}

    def record(response):
        responses.append(response)
        return response

    created = record(api_client.post(URL, destination_body(s3.endpoint, canaries), format="json"))
    assert created.status_code == 200, created.json()
    destination_id = created.json()["id"]
    detail = f"{URL}/{destination_id}"
    record(api_client.get(URL))
    record(api_client.get(detail))
    record(outsider_client.get(detail))
    record(api_client.patch(detail, {"credentials": successor}, format="json"))
    record(api_client.patch(detail, {"credentials": {**canaries, "secret_access_key": ""}}, format="json"))
    record(api_client.patch(detail, {"credentials": {**canaries, "extra": canaries["secret_access_key"]}},
                            format="json"))
    record(api_client.options(detail))
    record(api_client.put(detail, {"credentials": canaries}, format="json"))
    html = fake_http("html", canary=canary("R"))
    record(api_client.post(URL, destination_body(html.endpoint, canaries), format="json"))
    # With IAM on, a signature mismatch: its S3 error body names the access key id.
    s3.create_user("someone", [allow(["s3:PutObject"], bucket)])
    s3.set_auth_enforced(True)
    record(api_client.post(URL, destination_body(s3.endpoint, canaries), format="json"))
    s3.set_auth_enforced(False)
    record(api_client.get("/api/schema/"))
    version = CredentialVersion.objects.defer("secret").order_by("number").first()
    for page in ("/admin/exports/destination/", f"/admin/exports/destination/{destination_id}/change/",
                 "/admin/exports/credentialversion/", f"/admin/exports/credentialversion/{version.id}/change/",
                 "/admin/exports/destination/add/"):
        page_response = record(admin_client.get(page))
        assert page_response.status_code == 200, page
    record(admin_client.post(f"/admin/exports/destination/{destination_id}/change/",
                             {**canaries, "bucket_name": "x", "_save": "Save"}))
    record(admin_client.post("/admin/exports/destination/add/", {
        "workspace": str(api_client.workspace.id), "display_name": "admin", "bucket_name": "export-bucket",
        "endpoint_url": html.endpoint, "addressing_style": "auto", **canaries}))
    record(api_client.delete(detail))
    record(api_client.get(URL))
    out, err = capfd.readouterr()
    haystacks = [out, err, caplog.text]
    for response in responses:
        haystacks.append(response.content.decode(errors="replace"))
        haystacks.append(json.dumps(dict(response.items())))
    everything = "\n".join(haystacks)
    # botocore really logged the signed requests, with the credentials masked.
    assert "Sending http request" in caplog.text and logredact.MASK in caplog.text
    for value in [*canaries.values(), *successor.values()]:
        if everything.count(value):
            i = everything.index(value)
            print("LEAK CONTEXT", everything[max(0, i - 400):i + 200])
        assert everything.count(value) == 0, value


def test_botocore_debug_records_are_redacted():
    logredact.remember("super-secret-value-1234")
    message = ("Sending http request: <AWSPreparedRequest headers={'Authorization': b'AWS4-HMAC-SHA256 "
               "Credential=AKIAXYZ/2026/us-east-1/s3/aws4_request, Signature=abc', 'X-Amz-Security-Token': "
               "b'token-value'}> super-secret-value-1234")
    redacted = logredact.redact(message)
    assert "AKIAXYZ" not in redacted and "token-value" not in redacted and "super-secret-value-1234" not in redacted


# --- at rest ---------------------------------------------------------------------------------------


@pytest.fixture
def destination(api_client, s3, writer):
    response = api_client.post(URL, destination_body(s3.endpoint, writer), format="json")
    assert response.status_code == 200, response.json()
    return Destination.objects.get(id=response.json()["id"])


def test_the_same_credentials_encrypt_to_different_ciphertexts(destination, writer):
    services.destination_credentials_update(destination=destination, credentials=writer.as_dict())
    first, second = raw_secret_column()
    assert first != second
    assert writer.secret_access_key not in first + second


def test_a_tampered_ciphertext_fails_closed_and_reads_keep_working(api_client, destination):
    version_id = destination.current_credentials_id
    stored = raw_secret_column()[0]
    tamper(version_id, stored[:-5] + ("A" if stored[-5] != "A" else "B") + stored[-4:])
    with pytest.raises(CredentialsUnreadable) as unreadable:
        services.destination_validate(destination=destination)
    assert unreadable.value.status_code == 400 and "cannot be read" in unreadable.value.detail
    assert api_client.get(URL).status_code == 200
    assert api_client.get(f"{URL}/{destination.id}").status_code == 200


def test_a_ciphertext_copied_from_another_tenant_is_refused(api_client, outsider_client, s3, writer, destination):
    response = outsider_client.post(URL, destination_body(s3.endpoint, writer, name="theirs"), format="json")
    theirs = Destination.objects.get(id=response.json()["id"])
    tamper(theirs.current_credentials_id, raw_secret_column()[0])  # tenant A's ciphertext in tenant B's row
    with pytest.raises(CredentialsUnreadable):
        credential_version_credentials(version=theirs.current_credentials_id)
    assert credential_version_credentials(version=destination.current_credentials_id).access_key_id == \
        writer.access_key_id


# --- key rotation --------------------------------------------------------------------------------------


@pytest.fixture
def encryption_keys(settings, monkeypatch):
    """Switch FIELD_ENCRYPTION_KEY (and the library's crypter, which reads it once at import)."""

    def use(*keys: str) -> None:
        settings.FIELD_ENCRYPTION_KEY = list(keys)
        monkeypatch.setattr(encrypted, "CRYPTER", encrypted.get_crypter())

    return use


def test_the_rotation_command_moves_every_row_to_the_new_key(api_client, s3, writer, encryption_keys):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    encryption_keys(old)
    response = api_client.post(URL, destination_body(s3.endpoint, writer), format="json")
    destination = Destination.objects.get(id=response.json()["id"])
    services.destination_credentials_update(destination=destination, credentials=writer.as_dict())
    services.destination_credentials_update(destination=destination, credentials=writer.as_dict())
    encryption_keys(new, old)
    out = StringIO()
    call_command("reencrypt_fields", stdout=out)
    assert "exports.CredentialVersion.secret: 3 re-encrypted, 0 already current, 0 unreadable" in out.getvalue()
    encryption_keys(new)
    for version in CredentialVersion.objects.all():
        assert credential_version_credentials(version=version.id).secret_access_key == writer.secret_access_key
    again = StringIO()
    call_command("reencrypt_fields", stdout=again)
    assert "0 re-encrypted, 3 already current" in again.getvalue()


def test_the_rotation_command_reports_values_no_key_can_read(destination, encryption_keys):
    encryption_keys(Fernet.generate_key().decode())
    with pytest.raises(CommandError, match="1 value"):
        call_command("reencrypt_fields", stdout=StringIO())
    assert raw_secret_column()[0]  # left untouched


# --- purge ---------------------------------------------------------------------------------------------


def test_retired_versions_are_purged_once_no_unfinished_export_run_pins_them(workspace, destination, writer,
                                                                             settings):
    [export_run] = unfinished_export(workspace, destination.id).export_runs.all()
    export_run = export_services.export_run_begin(export_run_id=export_run.id)  # a worker took it: it pins v1
    services.destination_credentials_update(destination=destination, credentials=writer.as_dict())
    services.destination_credentials_update(destination=destination, credentials=writer.as_dict())
    v1, v2, v3 = CredentialVersion.objects.defer("secret").order_by("number")
    assert export_run.credential_version_id == v1.id
    assert services.credential_versions_purge(grace_seconds=3600) == 0  # still inside the grace period
    assert services.credential_versions_purge(grace_seconds=0) == 1  # v2; v1 is pinned, v3 is current
    purged = {v.number: v.purged_at for v in CredentialVersion.objects.defer("secret")}
    assert purged[1] is None and purged[2] is not None and purged[3] is None
    assert raw_secret_column()[1] is None
    with pytest.raises(CredentialsUnreadable, match="purged"):
        credential_version_credentials(version=v2.id)
    export_services.export_run_finish(export_run, status="Completed")
    settings.EXPORTS_CREDENTIAL_PURGE_GRACE_SECONDS = 0
    PERIODICS["exports.purge_credentials"].func()  # the periodic job: v1 is no longer pinned
    assert CredentialVersion.objects.filter(purged_at__isnull=False).count() == 2


def test_credential_versions_are_immutable(destination):
    version = CredentialVersion.objects.defer("secret").get()
    with pytest.raises(ValueError, match="immutable"):
        version.save()

"""Loopback object stores (a developer's MinIO on localhost:9000): allowed with DEBUG on, refused in production
unless EGRESS_ALLOWLIST names them, with a refusal that says so. The S3 server here is moto on loopback."""

from __future__ import annotations

import pytest

from core.egress import EgressDenied, check_host
from exports.bulk_exports.models import BulkExportRun
from tests.exports.support_destinations import destination_body
from tests.exports.support_exports import DESTINATIONS_URL, create_destination, create_export, drain, seed_trace_runs
from tracing.models import TracingProject

pytestmark = [pytest.mark.django_db, pytest.mark.no_postgres_pass]


@pytest.fixture
def no_allowlist(settings):
    settings.EGRESS_ALLOWLIST = []
    return settings


def localhost_endpoint(s3) -> str:
    return s3.endpoint.replace("127.0.0.1", "localhost")


def test_with_debug_on_a_destination_on_localhost_validates_and_an_export_writes_to_it(api_client, workspace, s3,
                                                                                        writer, no_allowlist):
    no_allowlist.DEBUG = True
    project = TracingProject.objects.create(workspace=workspace, name="loopback")
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer, endpoint_url=localhost_endpoint(s3))
    export = create_export(api_client, destination, project, days=1)
    drain()
    run = BulkExportRun.objects.get(bulk_export_id=export["id"])
    assert run.status == "Completed" and run.rows_written == 3


def test_in_production_a_loopback_destination_is_refused_with_how_to_allow_it(api_client, s3, writer, no_allowlist,
                                                                              connections):
    no_allowlist.DEBUG = False
    response = api_client.post(DESTINATIONS_URL, destination_body(s3.endpoint, writer), format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "Failed to validate S3 destination: Refused to connect to 127.0.0.1: loopback address. An operator can allow "
        "it by adding it to EGRESS_ALLOWLIST. Loopback is allowed while DEBUG is on.")
    assert connections == []


def test_in_production_the_allowlist_still_lets_a_loopback_destination_through(api_client, s3, writer, settings):
    settings.DEBUG = False
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    assert create_destination(api_client, s3, writer)["id"]


def test_debug_allows_loopback_only_not_private_or_metadata_addresses(no_allowlist):
    no_allowlist.DEBUG = True
    assert check_host("127.0.0.1") == ["127.0.0.1"] and check_host("::1") == ["::1"]
    with pytest.raises(EgressDenied) as private:
        check_host("10.0.0.5")
    assert private.value.detail == ("Refused to connect to 10.0.0.5: private address. An operator can allow it by "
                                    "adding it to EGRESS_ALLOWLIST.")
    with pytest.raises(EgressDenied) as metadata:
        check_host("169.254.169.254")
    assert metadata.value.detail == "Refused to connect to 169.254.169.254: cloud metadata address."

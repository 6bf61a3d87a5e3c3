"""Export runs under failures: transient errors, lost permissions, rotation, refusals, deletion, timeouts."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.models import Job
from core.worker import Worker
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport, BulkExportRun
from exports.destinations import services
from exports.destinations.models import CredentialVersion, Destination
from exports.storage_errors import ACCESS_DENIED, UNAVAILABLE
from tests.exports.support_destinations import BUCKET, WRITE_ACTIONS
from tests.exports.support_exports import Background, S3Proxy, create_destination, create_export, drain, seed_trace_runs
from tests.exports.support_files import parquet_keys, read_parquet
from tests.support_processes import server_fixture
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")


s3_proxy_server = server_fixture(S3Proxy, scope="module")


@pytest.fixture
def s3_proxy(s3, s3_proxy_server):
    """moto on another port, recording requests (and the signing key id) and injecting faults on demand."""
    s3_proxy_server.reset()
    yield s3_proxy_server
    s3_proxy_server.reset()


@pytest.fixture
def small_files(settings):
    """5 rows per page, per row group and per file: a day of 40 runs makes 8 files."""
    settings.EXPORT_BATCH_ROWS = 5
    settings.EXPORT_ROW_GROUP_ROWS = 5
    settings.EXPORT_FILE_ROLLOVER_BYTES = 1
    settings.EXPORT_RETRY_DELAY_SECONDS = 0
    return settings


def only_export_run(export: dict) -> BulkExportRun:
    return BulkExportRun.objects.get(bulk_export_id=export["id"])


def exported_ids(s3) -> list[str]:
    return [row for key in parquet_keys(s3) for row in read_parquet(s3, key).read().column("id").to_pylist()]


def no_pending_uploads(s3) -> bool:
    return s3.client().list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


def test_a_transient_error_is_retried_and_the_export_run_resumes_from_its_cursor(
        api_client, workspace, project, s3, writer, s3_proxy, small_files):
    runs = seed_trace_runs(workspace, project, days=1, per_day=40, minutes_apart=1)
    destination = create_destination(api_client, s3, writer, endpoint_url=s3_proxy.endpoint)
    export = create_export(api_client, destination, project, days=1)
    completes = []

    def second_complete(seen):
        if seen.completes_upload:
            completes.append(seen)
        return len(completes) >= 2

    s3_proxy.fail(second_complete, times=3)  # botocore's own three attempts all fail
    drain()

    run = only_export_run(export)
    assert run.status == "Completed" and run.retry_number == 1
    assert run.errors == {"retry_0": UNAVAILABLE}
    assert exported_ids(s3) == [str(r.id) for r in runs]
    # The first file was completed once and never written again: the retry resumed after it.
    first_file = parquet_keys(s3)[0]
    assert sum(1 for seen in s3_proxy.seen if seen.completes_upload and seen.path.endswith(first_file)) == 1
    assert no_pending_uploads(s3)


def test_transient_errors_beyond_the_retry_limit_fail_the_export_run(
        api_client, workspace, project, s3, writer, s3_proxy, small_files):
    small_files.EXPORT_MAX_RETRIES = 2
    seed_trace_runs(workspace, project, days=1, per_day=10)
    destination = create_destination(api_client, s3, writer, endpoint_url=s3_proxy.endpoint)
    export = create_export(api_client, destination, project, days=1)
    s3_proxy.fail(lambda seen: seen.method == "POST" and "uploads" in seen.query, times=float("inf"))
    drain()
    run = only_export_run(export)
    assert run.status == "Failed" and run.retry_number == 2
    assert run.errors == {"retry_0": UNAVAILABLE, "retry_1": UNAVAILABLE, "retry_2": UNAVAILABLE}
    assert BulkExport.objects.get(id=export["id"]).status == "Failed"


def test_a_key_that_loses_put_object_mid_export_run_fails_once_with_a_permission_error(
        transactional_db, api_client, workspace, project, s3, bucket, s3_proxy, small_files):
    small_files.EXPORT_BATCH_PAUSE_SECONDS = 0.1
    writer = s3.create_user("writer", [allow([*WRITE_ACTIONS, "s3:AbortMultipartUpload"], bucket)])
    admin = s3.create_user("iam-admin", [{"Effect": "Allow", "Action": "iam:*", "Resource": "*"}])
    seed_trace_runs(workspace, project, days=1, per_day=40, minutes_apart=1)
    s3.set_auth_enforced(True)
    destination = create_destination(api_client, s3, writer, endpoint_url=s3_proxy.endpoint)
    export = create_export(api_client, destination, project, days=1)
    revoked_at = []

    def revoke():
        s3.client("iam", credentials=admin).delete_user_policy(UserName="writer", PolicyName="writer-policy")
        revoked_at.append(len(s3_proxy.seen))

    revocation = Background(lambda: any(seen.completed_upload for seen in s3_proxy.seen), revoke)
    drain()
    assert revocation.join()

    run = only_export_run(export)
    assert run.status == "Failed" and run.retry_number == 0
    assert run.errors == {"retry_0": ACCESS_DENIED}
    assert 1 <= len(run.exported_files) < 8
    assert Job.objects.get(id=run.job_id).status == Job.Status.DONE  # not put back in the queue
    after = [seen for seen in s3_proxy.seen[revoked_at[0]:] if seen.access_key_id == writer.access_key_id]
    # The refused write, and at most the attempt to abort the upload it belonged to: no retry storm.
    assert 1 <= len(after) <= 3, after
    assert BulkExport.objects.get(id=export["id"]).status == "Failed"


def test_a_rotation_mid_export_run_leaves_the_running_one_on_the_old_key_and_the_next_on_the_new(
        transactional_db, api_client, workspace, project, s3, bucket, writer, s3_proxy, small_files):
    small_files.EXPORT_BATCH_PAUSE_SECONDS = 0.1
    small_files.EXPORT_MAX_RUNNING_RUNS = 1  # day 2 waits until day 1 is done
    rotated = s3.create_user("rotated", [allow(WRITE_ACTIONS, bucket)])
    seed_trace_runs(workspace, project, days=2, per_day=40, minutes_apart=1)
    destination = create_destination(api_client, s3, writer, endpoint_url=s3_proxy.endpoint)
    export = create_export(api_client, destination, project, days=2)
    rotated_at = []

    def rotate():
        services.destination_credentials_update(destination=Destination.objects.get(id=destination["id"]),
                                                credentials=rotated.as_dict())
        rotated_at.append(len(s3_proxy.seen))  # the new version is committed from here on

    rotation = Background(lambda: any(seen.completed_upload for seen in s3_proxy.seen), rotate)
    export_services.export_runs_dispatch()
    Worker(queues=["exports"], run_periodic=False).run_once()  # day 1, from start to end
    assert rotation.join()
    drain()  # day 2 starts after the rotation

    day1, day2 = BulkExportRun.objects.filter(bulk_export_id=export["id"]).order_by("start_time")
    assert (day1.status, day2.status) == ("Completed", "Completed")
    assert CredentialVersion.objects.get(id=day1.credential_version_id).number == 1
    assert CredentialVersion.objects.get(id=day2.credential_version_id).number == 2
    day1_requests = [seen for seen in s3_proxy.seen if "/day=1/" in seen.path]
    day2_requests = [seen for seen in s3_proxy.seen if "/day=2/" in seen.path]
    assert {seen.access_key_id for seen in day1_requests} == {writer.access_key_id}
    assert {seen.access_key_id for seen in day2_requests} == {rotated.access_key_id}
    # Day 1 went on writing with the old key after the new credentials were committed.
    assert [seen for seen in s3_proxy.seen[rotated_at[0]:] if "/day=1/" in seen.path]
    assert len(day1.exported_files) == len(day2.exported_files) == 8


def test_an_endpoint_the_egress_guard_refuses_at_export_run_start_fails_it_once(api_client, workspace, project, s3,
                                                                             writer, settings):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    settings.EGRESS_ALLOWLIST = []  # the operator no longer allows loopback
    drain()
    run = only_export_run(export)
    assert run.status == "Failed" and run.retry_number == 0
    assert run.errors["retry_0"].startswith("Refused to connect to 127.0.0.1")
    assert parquet_keys(s3) == []


def test_a_deleted_destination_fails_its_export_run_at_once_with_a_clear_error(
        api_client, workspace, project, s3, writer):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    Destination.objects.filter(id=destination["id"]).update(deleted_at=timezone.now())
    drain()
    run = only_export_run(export)
    assert run.status == "Failed" and run.errors == {"retry_0": "The destination of this export was deleted."}
    assert parquet_keys(s3) == []


def test_unreadable_credentials_fail_the_export_run_at_once(api_client, workspace, project, s3, writer):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    CredentialVersion.objects.filter(destination_id=destination["id"]).update(secret=None,
                                                                              purged_at=timezone.now())
    drain()
    run = only_export_run(export)
    assert run.status == "Failed" and run.retry_number == 0
    assert "purged" in run.errors["retry_0"]


def test_an_export_run_longer_than_the_limit_times_out_and_its_upload_is_aborted(
        api_client, workspace, project, s3, writer, settings):
    settings.EXPORT_BATCH_ROWS = 5
    settings.EXPORT_ROW_GROUP_ROWS = 5
    settings.EXPORT_BATCH_PAUSE_SECONDS = 0.2
    settings.EXPORT_RUN_MAX_SECONDS = 0.3
    seed_trace_runs(workspace, project, days=1, per_day=40, minutes_apart=1)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    drain()
    run = only_export_run(export)
    assert run.status == "TimedOut" and run.finished_at is not None
    assert run.errors == {"retry_0": "The run took longer than 0.3 seconds (EXPORT_RUN_MAX_SECONDS)."}
    assert parquet_keys(s3) == [] and no_pending_uploads(s3)
    assert BulkExport.objects.get(id=export["id"]).status == "TimedOut"


def test_an_export_run_cancelled_while_waiting_to_resume_aborts_the_upload_it_left(api_client, workspace, project, s3,
                                                                           writer):
    seed_trace_runs(workspace, project, days=1, per_day=3)
    destination = create_destination(api_client, s3, writer)
    export = create_export(api_client, destination, project, days=1)
    run = only_export_run(export)
    export_services.export_run_begin(export_run_id=run.id)  # a worker took it, started a file and died
    key = "exports/left-behind.parquet"
    upload = s3.client().create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    BulkExportRun.objects.filter(id=run.id).update(pending_key=key, pending_upload_id=upload)
    assert api_client.patch(f"/api/v1/bulk-exports/{export['id']}", {"status": "Cancelled"},
                            format="json").status_code == 200
    export_services.export_runs_sweep()  # the run holds a slot without a live job: it gets one
    drain()
    run.refresh_from_db()
    assert run.status == "Cancelled" and run.pending_upload_id is None
    assert no_pending_uploads(s3)

"""The S3 client factory: addressing as seen by the S3 server, pinning, retries, limits."""

from __future__ import annotations

import itertools

import pytest

from core import egress
from core.egress import EgressDenied
from exports import s3_clients
from tests.exports.support_destinations import BUCKET, destination_body, object_keys
from tests.support_s3 import allow

pytestmark = pytest.mark.usefixtures("egress_loopback")
URL = "/api/v1/bulk-exports/destinations"


def put_only(s3):
    return s3.create_user("put-only", [allow(["s3:PutObject"], BUCKET)])


def test_path_style_puts_the_bucket_in_the_path(api_client, recording_s3, s3, bucket):
    creds = put_only(s3)
    s3.set_auth_enforced(True)
    body = destination_body(recording_s3.endpoint, creds, config_kwargs_s3={"addressing_style": "path"})
    assert api_client.post(URL, body, format="json").status_code == 200
    put = [r for r in recording_s3.requests if r.method == "PUT"]
    assert len(put) == 1
    assert put[0].host == f"127.0.0.1:{recording_s3.port}"
    assert put[0].path.startswith(f"/{BUCKET}/exports/tmp/destination-check-") and put[0].path.endswith(".txt")
    assert put[0].access_key_id == creds.access_key_id
    s3.set_auth_enforced(False)
    assert object_keys(s3) == [put[0].path.removeprefix(f"/{BUCKET}/")]


def test_virtual_style_puts_the_bucket_in_the_host_name(api_client, recording_s3, s3, bucket, localhost_dns):
    creds = put_only(s3)
    s3.set_auth_enforced(True)
    body = destination_body(f"http://localhost:{recording_s3.port}", creds,
                            config_kwargs_s3={"addressing_style": "virtual"})
    assert api_client.post(URL, body, format="json").status_code == 200, recording_s3.requests
    put = [r for r in recording_s3.requests if r.method == "PUT"]
    assert [r.host for r in recording_s3.requests] == [f"{BUCKET}.localhost:{recording_s3.port}"] * 3
    assert put[0].path.startswith("/exports/tmp/destination-check-")
    s3.set_auth_enforced(False)
    assert object_keys(s3) == [put[0].path.removeprefix("/")]


def test_an_endpoint_that_names_the_bucket_gets_no_second_bucket_in_the_path(api_client, recording_s3, s3, bucket,
                                                                              localhost_dns):
    creds = put_only(s3)
    s3.set_auth_enforced(True)
    endpoint = f"http://{BUCKET}.localhost:{recording_s3.port}"
    body = destination_body(endpoint, creds, include_bucket_in_prefix=False)
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["config"]["include_bucket_in_prefix"] is False
    put = [r for r in recording_s3.requests if r.method == "PUT"]
    assert put[0].host == f"{BUCKET}.localhost:{recording_s3.port}"
    assert put[0].path.startswith("/exports/tmp/") and f"/{BUCKET}/" not in put[0].path
    s3.set_auth_enforced(False)
    assert object_keys(s3) == [put[0].path.removeprefix("/")]  # lands under the prefix, not under bucket/prefix


def test_with_include_bucket_in_prefix_the_same_endpoint_repeats_the_bucket(recording_s3, s3, bucket, localhost_dns):
    client = s3_clients.s3_client({"bucket_name": BUCKET, "prefix": "exports", "endpoint_url":
                                f"http://{BUCKET}.localhost:{recording_s3.port}",
                                "config_kwargs_s3": {"addressing_style": "path"}}, {"access_key_id": "AKIAX",
                                                                                    "secret_access_key": "s"})
    assert client.display_path("exports/a.parquet") == f"{BUCKET}/exports/a.parquet"
    client.put_object("exports/a.parquet", b"x")
    assert recording_s3.requests[-1].path == f"/{BUCKET}/exports/a.parquet"


def test_auto_addressing_with_an_ip_endpoint_uses_the_path(api_client, recording_s3, writer):
    assert api_client.post(URL, destination_body(recording_s3.endpoint, writer), format="json").status_code == 200
    assert {r.host for r in recording_s3.requests} == {f"127.0.0.1:{recording_s3.port}"}
    assert [r.method for r in recording_s3.requests] == ["PUT", "HEAD", "DELETE"]


def test_the_bucket_host_of_virtual_addressing_is_checked_too(api_client, recording_s3, writer, connections):
    def resolver(host):
        return ["169.254.169.254"] if host.startswith(f"{BUCKET}.") else ["127.0.0.1"]

    body = destination_body(f"http://localhost:{recording_s3.port}", writer,
                            config_kwargs_s3={"addressing_style": "virtual"})
    with egress.use_resolver(resolver):
        response = api_client.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == (f"Failed to validate S3 destination: Refused to connect to {BUCKET}.localhost "
                                         "(169.254.169.254): cloud metadata address.")
    assert recording_s3.requests == [] and [c for c in connections if c[0] == "169.254.169.254"] == []


def test_dns_rebinding_never_reaches_the_rebound_address(s3, writer, connections):
    config = {"bucket_name": BUCKET, "endpoint_url": f"http://rebind.localhost:{s3.port}",
              "config_kwargs_s3": {"addressing_style": "path"}}
    answers = itertools.cycle([["127.0.0.1"], ["169.254.169.254"]])
    outcomes = set()
    with egress.use_resolver(lambda host: next(answers)):
        for _ in range(20):
            try:
                client = s3_clients.s3_client(config, writer.as_dict(), max_attempts=1)
                s3_clients.write_test_file(client)
                outcomes.add("written")
            except EgressDenied as exc:
                assert "169.254.169.254" in exc.detail
                outcomes.add("refused")
    assert "refused" in outcomes
    assert [c for c in connections if c[0] == "169.254.169.254"] == []


def test_transient_errors_are_retried_and_auth_errors_are_not(fake_http):
    flaky = fake_http("flaky")
    creds = {"access_key_id": "AKIAX", "secret_access_key": "s"}
    client = s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": flaky.endpoint}, creds, max_attempts=3)
    check = s3_clients.write_test_file(client)
    assert [m for m, _ in flaky.seen].count("PUT") == 3 and check.deleted and check.verified_size
    denied = fake_http("s3error:AccessDenied")
    client = s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": denied.endpoint}, creds, max_attempts=3)
    with pytest.raises(Exception) as error:
        s3_clients.write_test_file(client)
    assert s3_clients.classify(error.value).category == "permission"
    assert len(denied.seen) == 1


def test_the_client_has_bounded_timeouts_standard_retries_and_lenient_checksums(writer, s3):
    client = s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": s3.endpoint}, writer.as_dict()).client
    config = client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (5.0, 10.0)
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert config.request_checksum_calculation == "when_required"
    assert config.response_checksum_validation == "when_required"
    assert isinstance(client._endpoint.http_session, s3_clients.PinnedURLLib3Session)


def test_puts_carry_content_md5_so_object_lock_buckets_accept_them(recording_s3, s3, bucket, writer):
    client = s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": recording_s3.endpoint}, writer.as_dict())
    client.put_object(client.key("a.txt"), b"hello")
    assert s3.client().get_object(Bucket=BUCKET, Key="a.txt")["Body"].read() == b"hello"


def test_the_environments_credentials_are_never_used_for_a_destination_with_credentials(
        recording_s3, s3, bucket, writer, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENT000000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ambient")
    client = s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": recording_s3.endpoint}, writer.as_dict())
    client.put_object("k", b"x")
    assert {r.access_key_id for r in recording_s3.requests} == {writer.access_key_id}


def test_without_credentials_and_without_ambient_permission_no_client_is_built(settings):
    settings.EXPORTS_ALLOW_AMBIENT_CREDENTIALS = False
    with pytest.raises(Exception, match="Credentials are required"):
        s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": "http://127.0.0.1:9"}, None)


def test_keys_live_under_the_prefix(writer, s3):
    client = s3_clients.s3_client({"bucket_name": BUCKET, "prefix": "/a/b/", "endpoint_url": s3.endpoint},
                               writer.as_dict())
    assert client.key("tmp", "x.txt") == "a/b/tmp/x.txt"
    assert s3_clients.s3_client({"bucket_name": BUCKET, "endpoint_url": s3.endpoint},
                             writer.as_dict()).key("tmp", "x.txt") == "tmp/x.txt"

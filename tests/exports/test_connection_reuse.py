"""Idle S3 connections shared between clients: reused while their host still checks out, never otherwise."""

from __future__ import annotations

import pytest

from core import egress
from core.egress import EgressDenied
from exports import s3_clients
from tests.exports.support_destinations import BUCKET

pytestmark = pytest.mark.usefixtures("egress_loopback")
METADATA = "169.254.169.254"
CREDENTIALS = {"access_key_id": "AKIAREUSE", "secret_access_key": "reuse-secret"}


class SwitchableResolver:
    """`localhost` resolves to 127.0.0.1; the bucket's own host to whatever the test sets."""

    def __init__(self):
        self.bucket_host_answer = ["127.0.0.1"]

    def __call__(self, host: str) -> list[str]:
        if host.startswith(f"{BUCKET}."):
            return list(self.bucket_host_answer)
        return ["127.0.0.1"]


@pytest.fixture
def resolver():
    switchable = SwitchableResolver()
    with egress.use_resolver(switchable):
        yield switchable


@pytest.fixture
def keep_alive_s3(fake_http):
    return fake_http("s3")


def virtual_client(server) -> s3_clients.S3Destination:
    """Requests go to `<bucket>.localhost`: the endpoint check passes whatever that host resolves to."""
    port = server.server.server_address[1]
    config = {"bucket_name": BUCKET, "endpoint_url": f"http://localhost:{port}",
              "config_kwargs_s3": {"addressing_style": "virtual"}}
    return s3_clients.s3_client(config, CREDENTIALS, max_attempts=1)


def connects_to(connections, server) -> list[tuple[str, int]]:
    return [c for c in connections if c[1] == server.server.server_address[1]]


def test_two_validations_of_one_host_share_one_connection(keep_alive_s3, resolver, connections):
    for _ in range(2):
        destination = virtual_client(keep_alive_s3)
        assert s3_clients.write_test_file(destination).deleted
        destination.close()
    assert len(keep_alive_s3.seen) == 6
    assert connects_to(connections, keep_alive_s3) == [("127.0.0.1", keep_alive_s3.server.server_address[1])]


def test_a_new_client_refuses_a_host_that_now_resolves_to_a_denied_address_despite_an_idle_connection(
        keep_alive_s3, resolver, connections):
    first = virtual_client(keep_alive_s3)
    s3_clients.write_test_file(first)
    first.close()
    resolver.bucket_host_answer = [METADATA]
    second = virtual_client(keep_alive_s3)  # the endpoint (localhost) still checks out
    with pytest.raises(EgressDenied) as refusal:
        s3_clients.write_test_file(second)
    assert refusal.value.detail == f"Refused to connect to {BUCKET}.localhost ({METADATA}): cloud metadata address."
    assert len(keep_alive_s3.seen) == 3
    assert [c for c in connections if c[0] == METADATA] == []


def test_a_reused_client_refuses_a_host_that_now_resolves_to_a_denied_address(keep_alive_s3, resolver, connections):
    destination = virtual_client(keep_alive_s3)
    s3_clients.write_test_file(destination)
    resolver.bucket_host_answer = [METADATA]
    with pytest.raises(EgressDenied):
        s3_clients.write_test_file(destination)
    assert len(keep_alive_s3.seen) == 3
    assert [c for c in connections if c[0] == METADATA] == []


def test_an_idle_connection_to_an_address_the_host_no_longer_resolves_to_is_not_reused(
        keep_alive_s3, resolver, connections, settings):
    settings.EGRESS_ALLOWLIST = ["127.0.0.0/8"]
    s3_clients.write_test_file(virtual_client(keep_alive_s3))
    resolver.bucket_host_answer = ["127.0.0.2"]  # nothing listens there
    with pytest.raises(Exception) as error:
        s3_clients.write_test_file(virtual_client(keep_alive_s3))
    assert s3_clients.classify(error.value).category != "permission"
    assert connects_to(connections, keep_alive_s3)[-1] == ("127.0.0.2", keep_alive_s3.server.server_address[1])
    assert len(keep_alive_s3.seen) == 3


def test_closing_a_client_leaves_the_shared_connections_to_the_others(keep_alive_s3, resolver, connections):
    kept, closed = virtual_client(keep_alive_s3), virtual_client(keep_alive_s3)
    assert kept.client._endpoint.http_session is closed.client._endpoint.http_session
    s3_clients.write_test_file(closed)
    closed.close()
    s3_clients.write_test_file(kept)
    assert len(connects_to(connections, keep_alive_s3)) == 1

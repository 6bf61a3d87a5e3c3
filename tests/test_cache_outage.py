"""A hung cache (a Redis that accepts connections and never answers) costs one request its socket timeout, then the
throttles leave it alone while their circuit is open: requests go through unthrottled and /healthz says so."""

from __future__ import annotations

import socket

import pytest

from core import throttling

pytestmark = [pytest.mark.django_db, pytest.mark.no_postgres_pass]


@pytest.fixture
def hung_redis(settings):
    """A listening socket nobody reads: the kernel accepts connections, no answer ever comes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.setblocking(False)
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{listener.getsockname()[1]}/0",
        "OPTIONS": {"socket_timeout": 0.2, "socket_connect_timeout": 0.2}}}
    throttling._circuit_open_until[0] = float("-inf")
    yield listener
    throttling._circuit_open_until[0] = float("-inf")
    listener.close()


def connections_made(listener: socket.socket) -> int:
    made = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return made
        connection.close()
        made += 1


def test_a_hung_cache_is_tried_once_then_left_alone_and_health_says_rate_limiting_is_off(hung_redis, make_client,
                                                                                          workspace, client):
    api = make_client(workspace)
    assert client.get("/healthz").json()["cache"] == "ok"
    assert api.get("/api/v1/workspaces/current").status_code == 200
    assert connections_made(hung_redis) >= 1
    for _ in range(5):
        assert api.get("/api/v1/workspaces/current").status_code == 200
    assert connections_made(hung_redis) == 0
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["cache"] == "unavailable, rate limiting off"

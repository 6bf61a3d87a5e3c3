"""The channel layer on Redis (REDIS_URL, CI's second pass): a receive that waits with nothing to deliver waits, and
does not fail (redis-py 8's 5 s socket timeout equalled channels_redis's 5 s blocking pop: every idle receive failed,
and the hubs fell back to polling the store meanwhile)."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer
from django.conf import settings

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="the channel layer is on Redis only with REDIS_URL")


def test_an_idle_receive_waits_past_the_blocking_pop_without_a_redis_timeout():
    async def receive_for(seconds: float) -> None:
        layer = get_channel_layer()
        channel = await layer.new_channel(prefix="test.idle.")
        try:
            await asyncio.wait_for(layer.receive(channel), seconds)
        except TimeoutError:
            return  # asyncio's own: nothing came, and nothing failed
        pytest.fail("a message arrived on a fresh channel")

    asyncio.run(receive_for(6.0))

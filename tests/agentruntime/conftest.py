"""Fixtures for the agent runtime's tests: the checkpointer's `saver`."""

from __future__ import annotations

import pytest

from agentruntime.checkpointer.saver import DjangoCheckpointSaver


@pytest.fixture
def saver():
    """The runtime's Django checkpointer, closed after the test (its worker threads hold connections)."""
    checkpointer = DjangoCheckpointSaver()
    yield checkpointer
    checkpointer.close()

"""Fixtures for the chat tests: `base` for those that talk to a live server (a module declares
`chat_server = live_chat_server(...)`, tests/chat/support_chat.py), and the checkpointer's `saver`."""

from __future__ import annotations

import pytest

from agentruntime.checkpointer.saver import DjangoCheckpointSaver


@pytest.fixture
def base(chat_server, transactional_db):
    """The URL of the module's live chat server; the test's rows are in the database it serves."""
    return chat_server.url


@pytest.fixture
def saver():
    """The chat's Django checkpointer, closed after the test (its worker threads hold connections)."""
    checkpointer = DjangoCheckpointSaver()
    yield checkpointer
    checkpointer.close()

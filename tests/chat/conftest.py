"""Fixtures for the chat tests: `base` for those that talk to a live server (a module declares
`chat_server = live_chat_server(...)`, tests/chat/support_chat.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def base(chat_server, transactional_db):
    """The URL of the module's live chat server; the test's rows are in the database it serves."""
    return chat_server.url

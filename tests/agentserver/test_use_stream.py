"""React's `useStream` (default Agent Server mode) in Chromium against the service's own /api, serving the test
project's chat graph as CHAT_GRAPH: a message's reply streams in token by token.

The deployed revision runs every scenario (chat, reload and rejoin, interrupt and resume) in
tests/deployments/test_live_js_clients.py.
"""

from __future__ import annotations

import pytest

from tests.agentserver.js_support import UseStreamPage, build_page, chat_streams_tokens
from tests.chat.chat_support import live_chat_server
from tests.chatui import conftest as chatui
from tests.chatui.conftest import PHONE

# The chat page tests' browser fixtures (Debian's Chromium driven by Playwright).
browser, new_page = chatui.browser, chatui.new_page
pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
# The browser fixture lets this process's Playwright loop use the ORM; the server must not inherit that.
server = live_chat_server(CHAT_GRAPH="./tests/agentserver/project/graphs.py:chat_graph",
                          CHAT_ALLOW_ANONYMOUS="false", DJANGO_ALLOW_ASYNC_UNSAFE="")


@pytest.fixture
def site(server, transactional_db, make_client, workspace, new_page):
    key = make_client(workspace, permissions=["chat:use"]).raw_key
    return UseStreamPage(new_page, build_page(), api_url=f"{server.url}/api", api_key=key)


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_use_stream_shows_a_reply_growing_token_by_token_on_the_services_api(site, viewport):
    chat_streams_tokens(site, "agent", viewport=viewport)

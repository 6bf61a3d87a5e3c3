"""React's `useStream` (default Agent Server mode) in Chromium against the service's own /api: a message's reply
streams in token by token (the test project's chat graph as CHAT_GRAPH), and a page on another origin, allowed by
AGENT_SERVER_CORS_ALLOW_ORIGINS, reloads mid-run and rejoins (its slow graph).

The deployed revision runs every scenario (chat, reload and rejoin, interrupt and resume) in
tests/deployments/test_live_js_clients.py.
"""

from __future__ import annotations

import pytest

from tests.agentserver.support_js import (
    PageServer,
    UseStreamPage,
    build_page,
    chat_streams_tokens,
    slow_run_survives_a_reload,
)
from tests.chat.support_chat import live_chat_server
from tests.chatui import conftest as chatui
from tests.chatui.conftest import PHONE

# The chat page tests' browser fixtures (Debian's Chromium driven by Playwright).
browser, new_page = chatui.browser, chatui.new_page
pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]
# The browser fixture lets this process's Playwright loop use the ORM; the server must not inherit that.
# Both serve their graph as "agent" on one test database: each executes only the runs it accepted (told at once),
# never the other's found by polling the shared queue.
server = live_chat_server(CHAT_GRAPH="./tests/agentserver/project/graphs.py:chat_graph",
                          CHAT_ALLOW_ANONYMOUS="false", DJANGO_ALLOW_ASYNC_UNSAFE="", CHAT_QUEUE_POLL_SECONDS="3600")


slow_server = live_chat_server(CHAT_GRAPH="./tests/agentserver/project/graphs.py:slow_graph",
                               CHAT_ALLOW_ANONYMOUS="false", DJANGO_ALLOW_ASYNC_UNSAFE="",
                               AGENT_SERVER_CORS_ALLOW_ORIGINS="*", CHAT_QUEUE_POLL_SECONDS="3600")


@pytest.fixture(scope="module")
def page_server():
    """The page on another origin than the servers' (localhost, not 127.0.0.1)."""
    served = PageServer(build_page())
    yield served
    served.close()


@pytest.fixture
def key(transactional_db, make_client, workspace):
    return make_client(workspace, permissions=["chat:use"]).raw_key


@pytest.fixture
def site(server, key, new_page):
    return UseStreamPage(new_page, build_page(), api_url=f"{server.url}/api", api_key=key)


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_use_stream_shows_a_reply_growing_token_by_token_on_the_services_api(site, viewport):
    chat_streams_tokens(site, "agent", viewport=viewport)


def test_a_page_on_another_origin_allowed_by_cors_rejoins_its_run_after_a_reload(slow_server, key, new_page,
                                                                                  page_server):
    site = UseStreamPage(new_page, page_server.bundle, api_url=f"{slow_server.url}/api", api_key=key,
                         page_server=page_server)
    # The run id comes from the stream's Content-Location header, which CORS must expose for the rejoin to work.
    slow_run_survives_a_reload(site, "agent")


def test_without_cors_a_page_on_another_origin_cannot_call_the_api(server, key, new_page, page_server):
    site = UseStreamPage(new_page, page_server.bundle, api_url=f"{server.url}/api", api_key=key,
                         page_server=page_server)
    page = site.open(assistant="agent", mode="chat")
    # The preflight gets no CORS headers: the browser never sends the POST and the fetch fails.
    outcome = page.evaluate("""async ([url, key]) => {
        try {
            const answer = await fetch(`${url}/threads`, {method: "POST", body: "{}",
                headers: {"Content-Type": "application/json", "X-Api-Key": key}});
            return `answered ${answer.status}`;
        } catch (error) {
            return `${error.name}: ${error.message}`;
        }
    }""", [site.api_url, key])
    assert outcome == "TypeError: Failed to fetch"

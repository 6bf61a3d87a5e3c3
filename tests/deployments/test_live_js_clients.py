"""LangChain's JS clients against a revision the local runner built and serves, at its stable URL's root: the
official `Client` in Node (tests/js/agent_server_client.mjs) and React's `useStream` in Chromium (the test page of
tests/agentserver/support_js.py), both in their default Agent Server mode."""

from __future__ import annotations

import pytest

from accounts.services import api_key_create
from tests.agentserver.support_js import (
    UseStreamPage,
    assert_report,
    build_page,
    chat_streams_tokens,
    interrupt_is_shown_and_resumed,
    run_agent_server_script,
    slow_run_survives_a_reload,
)
from tests.chatui import conftest as chatui
from tests.chatui.conftest import DESKTOP, PHONE
from tests.deployments.support_projects import deploy_test_project
from tests.deployments.test_live import Api

# The chat page tests' browser fixtures (Debian's Chromium driven by Playwright).
browser, new_page, shoot = chatui.browser, chatui.new_page, chatui.shoot
pytestmark = [pytest.mark.live, pytest.mark.node, pytest.mark.no_postgres_pass]


def test_a_deployed_revision_serves_the_js_client_and_use_stream_in_a_browser(stack_factory, workspace, tmp_path,
                                                                              new_page, shoot):
    bundle = build_page()
    owner = api_key_create(workspaces=[workspace])[1]
    # The browser fixture lets this process's Playwright loop use the ORM; the servers must not inherit that.
    stack = stack_factory(DJANGO_ALLOW_ASYNC_UNSAFE="")
    custom_url = deploy_test_project(Api(stack.url, owner), tmp_path, name="js-clients")

    assert_report(run_agent_server_script(chat=(custom_url, "chat"), slow=(custom_url, "slow"), api_key=owner))

    # The page is served on the service's origin, which the deployment's stable URL shares.
    site = UseStreamPage(new_page, bundle, api_url=custom_url, api_key=owner)
    shoot(chat_streams_tokens(site, "chat", viewport=DESKTOP), "use-stream-chat-1440")
    shoot(chat_streams_tokens(site, "chat", viewport=PHONE), "use-stream-chat-375")
    slow_run_survives_a_reload(site, "slow")
    interrupt_is_shown_and_resumed(site, "asker", viewport=DESKTOP,
                                   on_interrupt=lambda page: shoot(page, "use-stream-interrupt-1440"))
    shoot(interrupt_is_shown_and_resumed(site, "asker", viewport=PHONE), "use-stream-resumed-375")

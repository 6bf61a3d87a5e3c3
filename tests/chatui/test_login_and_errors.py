"""The chat page with anonymous chat off and a real model configured without its key: logging in, private threads,
and a failed run explained in plain words."""

from __future__ import annotations

import re

import httpx
import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from django.contrib.auth import get_user_model  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

from tests.chatui.conftest import live_page_server  # noqa: E402
from tests.chatui.support_page import log_in, send, thread_id_in_url, wait_for_run_end  # noqa: E402

# The page against PostgreSQL adds nothing the protocol tests (tests/chat) do not run there already.
pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.no_postgres_pass]
page_server = live_page_server(CHAT_ALLOW_ANONYMOUS="false", CHAT_MODEL="openai:gpt-5.4-mini", OPENAI_API_KEY="")


def test_users_log_in_and_see_only_their_own_threads_and_a_missing_key_is_named(base, new_page, shoot):
    users = get_user_model().objects
    users.create_user("alice", password="alice-secret-1")
    users.create_user("bob", password="bob-secret-1")
    assert httpx.get(f"{base}/api/threads").status_code == 401

    alice = new_page()
    alice.goto(f"{base}/chat/")
    shoot(alice, "login")
    log_in(alice, base, "alice", "alice-secret-1")
    expect(alice.locator("#offline-model-banner")).to_have_count(0)
    send(alice, "calculate 1 + 1")
    wait_for_run_end(alice)
    error = alice.locator(".error-box")
    expect(error).to_contain_text("The agent run failed")
    expect(error).to_contain_text("OPENAI_API_KEY is not set")
    shoot(alice, "desktop-missing-provider-key")
    thread_id = thread_id_in_url(alice)
    sidebar = alice.get_by_role("navigation", name="Conversations")
    expect(sidebar.locator(f'li[data-thread-id="{thread_id}"]')).to_contain_text("calculate 1 + 1")

    bob = new_page()
    log_in(bob, base, "bob", "bob-secret-1")
    expect(bob.get_by_text("No conversations yet.")).to_be_visible()
    bob.goto(f"{base}/chat/?thread={thread_id}")
    expect(bob.get_by_text("This conversation was not found")).to_be_visible()
    expect(bob.locator("article.msg-human")).to_have_count(0)

    alice.get_by_role("button", name="Log out").click()
    expect(alice).to_have_url(re.compile(r"/chat/login/"))
    assert alice.problems == [] and bob.problems == []

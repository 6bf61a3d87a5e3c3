"""The deep agent's memory on the chat page: a fact remembered in one conversation is known in the user's next one,
the Memory panel lists it and deletes it (after which a new conversation no longer knows it), and another user
never sees it. Screenshots at 1440 and 375 px land in test-artifacts/chatui/."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from django.contrib.auth import get_user_model  # noqa: E402
from playwright.sync_api import Page, expect  # noqa: E402

from tests.chatui.conftest import DESKTOP, PHONE, live_page_server  # noqa: E402
from tests.chatui.support_page import (  # noqa: E402
    assistant_turns,
    log_in,
    send,
    unnamed_controls,
    wait_for_run_end,
)

# The page against PostgreSQL adds nothing the protocol tests (tests/chat) do not run there already.
pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.no_postgres_pass]
page_server = live_page_server(CHAT_ALLOW_ANONYMOUS="false", CHAT_AGENT_DELAY_SCALE="0.4")

FACT = "Remember that my favourite number is 7"
QUESTION = "What is my favourite number?"


def narrow(page: Page) -> bool:
    """Whether the sidebar is a drawer (styles.css's narrow-screen layout)."""
    return (page.viewport_size or DESKTOP)["width"] < 768


def ask_in_new_conversation(page: Page, text: str) -> str:
    """Start a new conversation with `text` and return the agent's final answer."""
    if narrow(page):
        page.get_by_role("button", name="Conversations").click()
    page.get_by_role("link", name="New conversation").click()
    send(page, text)
    answer = assistant_turns(page).last.locator(":scope > .markdown")
    expect(answer).not_to_be_empty(timeout=30_000)
    wait_for_run_end(page)
    return answer.inner_text()


def open_memory(page: Page):
    """Open the Memory panel from the sidebar (from the drawer on a narrow screen) and return it."""
    if narrow(page):
        page.get_by_role("button", name="Conversations").click()
    page.get_by_role("navigation", name="Conversations").get_by_role("button", name="Memory").click()
    panel = page.get_by_role("dialog", name="Memory")
    expect(panel).to_be_visible()
    expect(panel.get_by_text("Loading…")).to_have_count(0)
    return panel


def close_memory(page: Page, panel) -> None:
    panel.get_by_role("button", name="Close").click()
    expect(panel).to_be_hidden()
    if narrow(page):
        page.get_by_role("button", name="Close the list").click()


def test_a_remembered_fact_is_known_across_the_users_conversations_listed_and_forgotten_from_the_panel(
        base, new_page, shoot):
    users = get_user_model().objects
    users.create_user("alice", password="alice-secret-1")
    users.create_user("bob", password="bob-secret-1")

    alice = new_page(viewport=DESKTOP)
    log_in(alice, base, "alice", "alice-secret-1")
    assert "your favourite number is 7" in ask_in_new_conversation(alice, FACT)
    assert "your favourite number is 7" in ask_in_new_conversation(alice, QUESTION)
    panel = open_memory(alice)
    [entry] = panel.locator("li.memory-entry").all()
    expect(entry).to_contain_text("my favourite number is 7")
    expect(entry).to_contain_text("/memories/favourite-number.md")
    assert unnamed_controls(alice) == []
    shoot(alice, "memory-panel-desktop")
    close_memory(alice, panel)

    # Another user: nothing in the panel, and the agent does not know the number.
    bob = new_page(viewport=PHONE)
    log_in(bob, base, "bob", "bob-secret-1")
    panel = open_memory(bob)
    expect(panel.get_by_text("Nothing remembered yet.")).to_be_visible()
    expect(panel.locator("li.memory-entry")).to_have_count(0)
    shoot(bob, "memory-panel-phone-empty")
    close_memory(bob, panel)
    answer = ask_in_new_conversation(bob, QUESTION)
    assert "7" not in answer and "don't remember" in answer

    # Alice, on a phone, deletes the entry from the panel: a new conversation no longer knows the number.
    alice.set_viewport_size(PHONE)
    panel = open_memory(alice)
    shoot(alice, "memory-panel-phone")
    panel.get_by_role("button", name="Forget /memories/favourite-number.md").click()
    expect(panel.locator("li.memory-entry")).to_have_count(0)
    expect(panel.get_by_text("Nothing remembered yet.")).to_be_visible()
    close_memory(alice, panel)
    answer = ask_in_new_conversation(alice, QUESTION)
    assert "7" not in answer and "don't remember" in answer
    panel = open_memory(alice)
    expect(panel.get_by_text("Nothing remembered yet.")).to_be_visible()
    assert alice.problems == [] and bob.problems == []

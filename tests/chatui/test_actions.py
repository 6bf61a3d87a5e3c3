"""Message actions in a real browser: copy, edit and resend, regenerate, switching branches (also after a reload),
renaming and searching threads, markdown, at 1440 × 900 and 375 × 800, in light and dark mode.

One live server and one browser serve the whole module; screenshots land in test-artifacts/chatui/.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from agentruntime.models import ChatThread  # noqa: E402
from tests.chatui.conftest import DESKTOP, live_page_server  # noqa: E402
from tests.chatui.support_page import (  # noqa: E402
    assistant_turns,
    composer,
    final_answer,
    send,
    thread_id_in_url,
    transcript,
    unnamed_controls,
    wait_for_run_end,
)

# The page against PostgreSQL adds nothing the protocol tests (tests/chat) do not run there already.
pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.no_postgres_pass]
page_server = live_page_server(CHAT_AGENT_DELAY_SCALE="0.4")
PHONE = {"width": 375, "height": 800}


def open_page(new_page, base, viewport, scheme="light"):
    page = new_page(viewport=viewport, color_scheme=scheme, permissions=["clipboard-read", "clipboard-write"])
    page.goto(f"{base}/chat/")
    return page


def ask(page, text: str) -> None:
    send(page, text)
    wait_for_run_end(page)


def humans(page):
    return transcript(page).locator("article.msg-human")


def human_texts(page):
    return transcript(page).locator("article.msg-human .msg-text")


def switcher(article):
    return article.get_by_role("group", name="Versions of this message")


def wait_for_answer(page, text: str) -> None:
    """Wait until the newest answer contains `text` and its run is over (a fork first restarts the page's stream)."""
    expect(assistant_turns(page).last.locator(":scope > .markdown")).to_contain_text(text, timeout=30_000)
    wait_for_run_end(page)


def watch_geometry(page) -> None:
    """Record, from now on, the conversation column's width and the first user bubble's right edge at every change."""
    page.evaluate("""() => {
      const seen = window.__geometry = new Set();
      const check = () => {
        const column = document.querySelector('.transcript-inner');
        const bubble = document.querySelector('article.msg-human .msg-bubble');
        if (column && bubble) {
          seen.add(`${column.getBoundingClientRect().width}|${bubble.getBoundingClientRect().right}`);
        }
      };
      check();
      new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true});
    }""")


def geometry_seen(page) -> list[str]:
    return page.evaluate("() => [...window.__geometry]")


def clipboard(page) -> str:
    return page.evaluate("() => navigator.clipboard.readText()")




@pytest.mark.parametrize(("name", "viewport", "scheme"), [("desktop", DESKTOP, "light"), ("phone", PHONE, "light")])
def test_edit_and_resend_forks_and_the_branches_stay_reachable_after_a_reload(base, new_page, shoot, name, viewport,
                                                                              scheme):
    page = open_page(new_page, base, viewport, scheme)
    ask(page, "calculate 1 + 1")
    # Nothing moves sideways while the next answer streams in (the scrollbar has its gutter from the start).
    watch_geometry(page)
    ask(page, "calculate 2 + 2")
    assert "4" in final_answer(page)
    assert len(geometry_seen(page)) == 1, geometry_seen(page)

    second = humans(page).nth(1)
    # A visible focus ring on the keyboard's way through the actions.
    page.keyboard.press("Shift")
    second.get_by_role("button", name="Copy message").focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") == "solid"
    shoot(page, f"actions-{name}-focus")
    second.get_by_role("button", name="Copy message").click()
    assert clipboard(page) == "calculate 2 + 2"
    expect(second.get_by_role("button", name="Copy message")).to_have_text("Copied")

    second.get_by_role("button", name="Edit message").click()
    editor = page.get_by_role("form", name="Edit your message")
    expect(editor.get_by_label("Edited message")).to_be_focused()
    editor.get_by_label("Edited message").fill("calculate 3 + 3")
    shoot(page, f"actions-{name}-editing")
    editor.get_by_label("Edited message").press("Enter")
    wait_for_answer(page, "3 + 3 = 6")
    expect(human_texts(page)).to_have_text(["calculate 1 + 1", "calculate 3 + 3"])
    versions = switcher(humans(page).nth(1))
    expect(versions).to_contain_text("2/2")
    shoot(page, f"actions-{name}-edited")

    # Back to the first version, then reload: the newest version shows, and the old one is one click away.
    versions.get_by_role("button", name="Previous version").click()
    expect(human_texts(page)).to_have_text(["calculate 1 + 1", "calculate 2 + 2"])
    expect(switcher(humans(page).nth(1))).to_contain_text("1/2")
    assert "2 + 2 = 4" in final_answer(page)
    expect(page.get_by_text("You are looking at an earlier version")).to_be_visible()
    shoot(page, f"actions-{name}-earlier-version")
    page.reload()
    expect(human_texts(page)).to_have_text(["calculate 1 + 1", "calculate 3 + 3"])
    switcher(humans(page).nth(1)).get_by_role("button", name="Previous version").click()
    expect(human_texts(page)).to_have_text(["calculate 1 + 1", "calculate 2 + 2"])
    switcher(humans(page).nth(1)).get_by_role("button", name="Next version").click()
    expect(human_texts(page)).to_have_text(["calculate 1 + 1", "calculate 3 + 3"])
    assert "3 + 3 = 6" in final_answer(page)
    assert unnamed_controls(page) == []
    assert page.problems == []


@pytest.mark.parametrize(("name", "viewport"), [("desktop-dark", DESKTOP), ("phone-dark", PHONE)])
def test_regenerate_makes_a_second_answer_and_both_stay_reachable(base, new_page, shoot, name, viewport):
    page = open_page(new_page, base, viewport, scheme="dark")
    # The page follows the system's dark setting.
    assert page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor") == "rgb(20, 24, 31)"
    ask(page, "Research the history of the abacus")
    answer = final_answer(page)
    assert "the history of the abacus" in answer and "mock" in answer

    last = assistant_turns(page).last
    last.get_by_role("button", name="Copy answer").click()
    assert clipboard(page).startswith('**Research** (researcher): I searched for "the history of the abacus".')
    last.get_by_role("button", name="Regenerate answer").click()
    expect(switcher(assistant_turns(page).last)).to_contain_text("2/2", timeout=30_000)
    wait_for_answer(page, "the history of the abacus")
    versions = switcher(assistant_turns(page).last)
    expect(versions).to_contain_text("2/2")
    expect(humans(page)).to_have_count(1)
    expect(page.locator("section.subagent")).to_have_count(1)
    expect(page.locator("section.subagent")).to_have_attribute("data-status", "complete")
    shoot(page, f"actions-{name}-regenerated")

    versions.get_by_role("button", name="Previous version").click()
    expect(switcher(assistant_turns(page).last)).to_contain_text("1/2")
    expect(page.locator("section.subagent")).to_have_count(1)
    shoot(page, f"actions-{name}-first-answer")
    page.reload()
    expect(switcher(assistant_turns(page).last)).to_contain_text("2/2")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
    assert unnamed_controls(page) == []
    assert page.problems == []


def test_markdown_renders_headings_lists_tables_and_highlighted_code_with_a_copy_button(base, new_page, shoot):
    for viewport, scheme, name in ((DESKTOP, "light", "desktop"), (DESKTOP, "dark", "desktop-dark"),
                                   (PHONE, "light", "phone")):
        page = open_page(new_page, base, viewport, scheme)
        ask(page, "hello")
        answer = assistant_turns(page).last.locator(".markdown")
        expect(answer.locator("h3")).to_have_text("What the offline model can do")
        expect(answer.locator("ul > li")).to_have_count(2)
        expect(answer.locator("table th")).to_have_text(["You write", "Goes to"])
        code = answer.locator(".code-block code.hljs.language-json")
        expect(code.locator("span.hljs-attr").first).to_be_visible()
        answer.get_by_role("button", name="Copy code").click()
        assert json.loads(clipboard(page))["method"] == "run.start"
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
        shoot(page, f"markdown-{name}")
        assert page.problems == []


def test_threads_are_renamed_and_searched_from_the_sidebar(base, new_page, shoot):
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page = open_page(new_page, base, viewport)
        ask(page, f"Research owls for {name}")
        thread = thread_id_in_url(page)
        page.goto(f"{base}/chat/")
        ask(page, f"Research the history of the abacus for {name}")
        if viewport is PHONE:
            page.get_by_role("button", name="Conversations").click()
        sidebar = page.get_by_role("navigation", name="Conversations")
        # With a mouse, a thread's buttons show when its row is hovered (or focused).
        sidebar.locator(f'li[data-thread-id="{thread}"]').hover()
        sidebar.get_by_role("button", name=f"Rename conversation: Research owls for {name}").click()
        field = sidebar.get_by_label(f"New title for “Research owls for {name}”")
        expect(field).to_be_focused()
        field.fill(f"Night birds {name}")
        shoot(page, f"rename-{name}")
        field.press("Enter")
        expect(sidebar.locator(f'li[data-thread-id="{thread}"] .thread-title')).to_have_text(f"Night birds {name}")
        assert ChatThread.objects.get(pk=thread).title == f"Night birds {name}"

        search = sidebar.get_by_label("Search conversations by title")
        search.fill(f"BIRDS {name.upper()}")
        expect(sidebar.locator("li.thread")).to_have_count(1)
        expect(sidebar.locator("li.thread .thread-title")).to_have_text(f"Night birds {name}")
        shoot(page, f"search-{name}")
        search.fill("no such title")
        expect(sidebar.get_by_text("No conversation title contains “no such title”.")).to_be_visible()
        search.fill("")
        expect(sidebar.locator(f'li[data-thread-id="{thread}"]')).to_have_count(1)
        assert page.problems == []
    assert composer(page).is_visible()

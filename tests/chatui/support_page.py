"""Driving the chat page: send a message, wait for the run, read cards and answers."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

EXAMPLE = "Research LangGraph streaming, and separately calculate 42 * 17."
RUN_TIMEOUT_MS = 30_000


def composer(page: Page) -> Locator:
    return page.get_by_label("Message to the agent")


def send(page: Page, text: str) -> None:
    box = composer(page)
    box.fill(text)
    box.press("Enter")


def stop_button(page: Page) -> Locator:
    return page.get_by_role("button", name="Stop", exact=True)


def wait_until_running(page: Page) -> None:
    expect(stop_button(page)).to_be_visible(timeout=RUN_TIMEOUT_MS)


def wait_for_run_end(page: Page) -> None:
    expect(stop_button(page)).to_have_count(0, timeout=RUN_TIMEOUT_MS)


def subagent(page: Page, name: str) -> Locator:
    return page.locator(f'section.subagent[data-subagent="{name}"]')


def transcript(page: Page) -> Locator:
    return page.get_by_role("log", name="Conversation")


def assistant_turns(page: Page) -> Locator:
    return transcript(page).locator("> .transcript-inner > article.msg-ai")


def final_answer(page: Page) -> str:
    return assistant_turns(page).last.locator(":scope > .markdown").inner_text()


def watch_streaming(page: Page) -> None:
    """Record, from now on, what the page shows while it streams (read it back with `streaming_seen`)."""
    page.evaluate("""() => {
      const seen = window.__streaming = {thinkingOpen: false, answerLengths: []};
      const check = () => {
        if (document.querySelector('.thinking[data-thinking=true] .thinking-toggle[aria-expanded=true]')) {
          seen.thinkingOpen = true;
        }
        const answers = document.querySelectorAll('.transcript-inner > article.msg-ai > .markdown');
        const length = answers.length ? answers[answers.length - 1].textContent.length : 0;
        if (length && !seen.answerLengths.includes(length)) seen.answerLengths.push(length);
      };
      new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true,
                                                          attributes: true});
    }""")


def streaming_seen(page: Page) -> dict:
    return page.evaluate("() => window.__streaming")


def thread_id_in_url(page: Page) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    return (parse_qs(urlsplit(page.url).query).get("thread") or [None])[0]


def unnamed_controls(page: Page) -> list[str]:
    """Visible buttons, links and form fields without an accessible name (by label, aria-label or text)."""
    return page.evaluate("""() => {
      const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
      const nameOf = (el) => {
        const labelled = el.getAttribute('aria-labelledby');
        const byId = (id) => document.getElementById(id)?.textContent || '';
        if (labelled) return labelled.split(/\\s+/).map(byId).join(' ');
        return el.getAttribute('aria-label') || [...(el.labels || [])].map((l) => l.textContent).join(' ')
          || el.textContent || el.getAttribute('title') || '';
      };
      return [...document.querySelectorAll('button, a[href], textarea, input:not([type=hidden]), select')]
        .filter(visible).filter((el) => !nameOf(el).trim()).map((el) => el.outerHTML.slice(0, 120));
    }""")


def log_in(page: Page, base: str, username: str, password: str) -> None:
    """Open the chat page, which sends an anonymous visitor to the login form, and log in there."""
    page.goto(f"{base}/chat/")
    expect(page).to_have_url(re.compile(r"/chat/login/\?next=/chat/$"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}/chat/")
    expect(page.locator(".account")).to_contain_text(f"Signed in as {username}")

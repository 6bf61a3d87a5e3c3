"""Reading the admin's pages in a browser: messages, buttons, the size of what is shown."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.admin_ui.conftest import DESKTOP, PHONE

VIEWPORT_PARAMS = [("desktop", DESKTOP), ("phone", PHONE)]


def messages(page: Page, level: str = "success") -> Locator:
    return page.locator(f"ul.messagelist li.{level}")


def object_button(page: Page, label: str) -> Locator:
    return page.locator("ul.object-tools").get_by_role("button", name=label, exact=True).or_(
        page.locator("ul.object-tools").get_by_role("link", name=label))


def expect_message(page: Page, text: str, level: str = "success") -> None:
    expect(messages(page, level)).to_contain_text(text)


def confirm(page: Page, label: str) -> None:
    """On a confirmation page: it says what will happen, then 'Yes, <label>'."""
    expect(page.locator(".confirm-what")).to_be_visible()
    page.get_by_role("button", name=f"Yes, {label.lower()}").click()


def fits_sideways(page: Page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")

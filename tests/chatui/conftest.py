"""Fixtures for the chat page tests: a live server, Debian's Chromium driven by Playwright (tests/support_browser.py),
screenshots."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tests.support_browser import launched_chromium, page_factory, screenshot_saver
from tests.support_processes import BASE_DIR, live_server_fixture

ARTIFACTS = BASE_DIR / "test-artifacts" / "chatui"
# The scripted model a little slower than its real pace (about 5 s for the example prompt), so that a test can
# reload, stop or cut the network mid-run even on a busy machine.
PAGE_ENV = {"CHAT_MODEL": "", "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_GRAPH": "chat.agent.graph:build_graph",
            "CHAT_AGENT_DELAY_SCALE": "1.5", "CHAT_STORE_POLL_SECONDS": "0.1",
            # Set in this process while a browser runs (see `browser`); the server under test must not inherit it.
            "DJANGO_ALLOW_ASYNC_UNSAFE": ""}
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 740}


def pinned_chromium_version() -> str:
    """The Chromium version the installed Playwright is built for (its driver's browsers.json)."""
    browsers = resources.files("playwright") / "driver" / "package" / "browsers.json"
    entries = json.loads(browsers.read_text())["browsers"]
    return next(b["browserVersion"] for b in entries if b["name"] == "chromium")


def major(version: str) -> int:
    return int(version.split(".")[0])


@pytest.fixture(scope="module")
def browser():
    yield from launched_chromium()


def live_page_server(**env: str):
    """A module-scoped fixture: Daphne serving the whole app on the test database, with PAGE_ENV plus `env`."""
    return live_server_fixture({**PAGE_ENV, **env}, name="chatui")


@pytest.fixture
def base(page_server, transactional_db):
    """The URL of the module's `page_server` (each browser test module names its own with live_page_server)."""
    return page_server.url


@pytest.fixture
def new_page(browser):
    """new_page(viewport=DESKTOP) -> a page in a fresh browser context; `page.problems` collects script errors."""
    yield from page_factory(browser, default_viewport=DESKTOP)


@pytest.fixture
def shoot():
    """shoot(page, name) saves a screenshot under test-artifacts/chatui/ (git-ignored)."""
    return screenshot_saver(ARTIFACTS)

"""Fixtures for the chat page tests: a live server, Debian's Chromium driven by Playwright, screenshots.

Playwright never downloads a browser here: it drives the `chromium` package (scripts/test-deps.d/20-chromium.sh
installs it). Without it, or without the `playwright` package, the browser tests skip and say what to install.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from tests.support import BASE_DIR, LiveServer

ARTIFACTS = BASE_DIR / "test-artifacts" / "chatui"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# The scripted model a little slower than its real pace (about 5 s for the example prompt), so that a test can
# reload, stop or cut the network mid-run even on a busy machine.
PAGE_ENV = {"CHAT_MODEL": "", "CHAT_ALLOW_ANONYMOUS": "true", "CHAT_GRAPH": "chat.agent.graph:build_graph",
            "CHAT_AGENT_DELAY_SCALE": "1.5", "CHAT_STORE_POLL_SECONDS": "0.1",
            # Set in this process while a browser runs (see `browser`); the server under test must not inherit it.
            "DJANGO_ALLOW_ASYNC_UNSAFE": ""}
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 740}


def chromium_path() -> str | None:
    return shutil.which("chromium") or next((p for p in ("/usr/bin/chromium",) if Path(p).exists()), None)


def pinned_chromium_version() -> str:
    """The Chromium version the installed Playwright is built for (its driver's browsers.json)."""
    browsers = resources.files("playwright") / "driver" / "package" / "browsers.json"
    entries = json.loads(browsers.read_text())["browsers"]
    return next(b["browserVersion"] for b in entries if b["name"] == "chromium")


def major(version: str) -> int:
    return int(version.split(".")[0])


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Browser tests need the playwright package: pip install -r requirements-dev.txt")
    executable = chromium_path()
    if executable is None:
        pytest.skip("Browser tests need Chromium: install the Debian 'chromium' package "
                    "(scripts/test-deps.d/20-chromium.sh does it when run as root)")
    # Playwright's sync API keeps an event loop running in this thread, which Django takes for async code and then
    # refuses the test's own ORM calls (and pytest-django's flush). Nothing here is async: allow them.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def live_page_server(**env: str):
    """A module-scoped fixture: Daphne serving the whole app on the test database, with PAGE_ENV plus `env`."""

    @pytest.fixture(scope="module")
    def server(django_db_setup, django_db_blocker, tmp_path_factory):
        with django_db_blocker.unblock():
            started = LiveServer(env={**PAGE_ENV, **env},
                                 log_path=tmp_path_factory.mktemp("chatui") / "server.log").start()
        yield started
        started.stop()

    return server


class PageProblems(list):
    """Uncaught script errors of a page; a test fails when there are any."""


@pytest.fixture
def new_page(browser):
    """new_page(viewport=DESKTOP) -> a page in a fresh browser context; `page.problems` collects script errors."""
    contexts = []

    def make(viewport=None, **options):
        context = browser.new_context(viewport=viewport or DESKTOP, **options)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.problems = PageProblems()
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shoot():
    """shoot(page, name) saves a screenshot under test-artifacts/chatui/ (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save

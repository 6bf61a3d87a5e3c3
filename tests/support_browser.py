"""Debian's Chromium driven by Playwright, for the admin and chat page tests: launching it, fresh pages that
collect their script errors, and screenshots.

Playwright never downloads a browser here: it drives the `chromium` package (scripts/test-deps.d/20-chromium.sh
installs it). Without it, or without the `playwright` package, the browser tests skip and say what to install.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or next((p for p in ("/usr/bin/chromium",) if Path(p).exists()), None)


def launched_chromium() -> Iterator:
    """Yield a launched Chromium (for a module-scoped `browser` fixture), or skip saying what is missing."""
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


class PageProblems(list):
    """Uncaught script errors of a page; a test fails when there are any."""


def page_factory(browser, *, default_viewport: dict, prepare: Callable = lambda page: None, **defaults) -> Iterator:
    """Yield make(viewport=None, **context_options) -> a page in a fresh browser context, after `prepare(page)`;
    `page.problems` collects script errors. The contexts close when the fixture using this ends."""
    contexts = []

    def make(viewport: dict | None = None, **options):
        context = browser.new_context(viewport=viewport or default_viewport, **{**defaults, **options})
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.problems = PageProblems()
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        prepare(page)
        return page

    yield make
    for context in contexts:
        context.close()


def screenshot_saver(artifacts: Path) -> Callable[..., Path]:
    """save(page, name) saves a full-page screenshot as artifacts/<name>.png (git-ignored) and returns its path."""
    artifacts.mkdir(parents=True, exist_ok=True)

    def save(page, name: str) -> Path:
        path = artifacts / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save

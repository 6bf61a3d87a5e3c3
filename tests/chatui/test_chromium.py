"""Which Chromium the browser tests drive, and whether it is new enough for the pinned Playwright."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from tests.chatui.conftest import major, pinned_chromium_version  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.no_postgres_pass]


def test_chromium_is_new_enough_for_the_pinned_playwright(browser):
    installed, wanted = browser.version, pinned_chromium_version()
    print(f"Chromium in use: {installed} (Playwright is built for {wanted})")
    assert major(installed) >= major(wanted), (
        f"Chromium {installed} is older than {wanted}, the version the pinned Playwright drives: upgrade the "
        f"'chromium' package (apt-get install --only-upgrade chromium) or pin an older playwright in "
        f"requirements-dev.txt")

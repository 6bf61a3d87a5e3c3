"""Fixtures for the admin in a real browser: one live server and one Chromium per module, an admin user that
logs in through the login page, screenshots under test-artifacts/admin/ (git-ignored)."""

from __future__ import annotations

import pytest

from tests.support_browser import launched_chromium, page_factory, screenshot_saver
from tests.support_processes import BASE_DIR, LiveServer

ARTIFACTS = BASE_DIR / "test-artifacts" / "admin"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 800}
VIEWPORTS = {"desktop": DESKTOP, "phone": PHONE}
PASSWORD = "admin-pw-for-tests"
SERVER_ENV = {
    "EGRESS_ALLOWLIST": "127.0.0.1",  # the moto S3 server lives on loopback
    "DEPLOY_LOCAL_RUNNER_ENABLED": "true",  # redeploy needs a runner that accepts the source (nothing runs it)
    "THROTTLE_RATES": "destination-validation=1000/min",
    "DJANGO_ALLOW_ASYNC_UNSAFE": "",
}


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a downloaded browser), one per module."""
    yield from launched_chromium()


@pytest.fixture(scope="module")
def admin_server(django_db_setup, django_db_blocker, tmp_path_factory):
    root = tmp_path_factory.mktemp("admin-ui")
    with django_db_blocker.unblock():
        started = LiveServer(env={**SERVER_ENV, "DEPLOY_ROOT": str(root / "deploy")},
                             log_path=root / "server.log").start()
    yield started
    started.stop()


@pytest.fixture
def base(admin_server, transactional_db, settings):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]  # for what the test itself does (creating destinations, a worker)
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", "", PASSWORD)
    return admin_server.url


@pytest.fixture
def admin_page(browser, base):
    """admin_page(viewport, **context_options) -> a logged-in page; `page.problems` collects script errors."""

    def log_in(page):
        page.goto(f"{base}/admin/login/?next=/admin/")
        page.get_by_label("Username").fill("root")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/admin/")

    yield from page_factory(browser, default_viewport=DESKTOP, prepare=log_in,
                            permissions=["clipboard-read", "clipboard-write"])


@pytest.fixture
def shoot():
    """shoot(page, name) saves a full-page screenshot under test-artifacts/admin/."""
    return screenshot_saver(ARTIFACTS)

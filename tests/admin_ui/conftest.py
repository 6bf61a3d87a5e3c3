"""Fixtures for the admin in a real browser: one live server and one Chromium per module, an admin user that
logs in through the login page, screenshots under test-artifacts/admin/ (git-ignored)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import BASE_DIR, LiveServer

ARTIFACTS = BASE_DIR / "test-artifacts" / "admin"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 800}
VIEWPORTS = {"desktop": DESKTOP, "phone": PHONE}
PASSWORD = "admin-pw-for-tests"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SERVER_ENV = {
    "EGRESS_ALLOWLIST": "127.0.0.1",  # the moto S3 server lives on loopback
    "DEPLOY_LOCAL_RUNNER_ENABLED": "true",  # redeploy needs a runner that accepts the source (nothing runs it)
    "THROTTLE_RATES": "destination-validation=1000/min",
    "DJANGO_ALLOW_ASYNC_UNSAFE": "",
}


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a downloaded browser), one per module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Browser tests need the playwright package: pip install -r requirements-dev.txt")
    executable = shutil.which("chromium") or shutil.which("/usr/bin/chromium")
    if executable is None:
        pytest.skip("Browser tests need Chromium: install the Debian 'chromium' package "
                    "(scripts/test-deps.d/20-chromium.sh does it when run as root)")
    # Playwright's sync API keeps an event loop in this thread; Django would then refuse the test's ORM calls.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


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
    contexts = []

    def make(viewport=DESKTOP, **options):
        context = browser.new_context(viewport=viewport, permissions=["clipboard-read", "clipboard-write"], **options)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("pageerror", lambda error: page.problems.append(str(error)))
        page.goto(f"{base}/admin/login/?next=/admin/")
        page.get_by_label("Username").fill("root")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/admin/")
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def shoot():
    """shoot(page, name) saves a full-page screenshot under test-artifacts/admin/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str):
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save

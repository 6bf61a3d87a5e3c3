"""The Agent Server API's reference page (GET /api/docs) in Chromium: it renders every operation without any
request leaving the server, on a desktop and on a phone."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from agentserver.openapi_document import agent_server_document  # noqa: E402
from tests.chatui.conftest import DESKTOP, PHONE, live_page_server  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.no_postgres_pass]
docs_server = live_page_server()


def operation_count() -> int:
    return sum(len(item) for item in agent_server_document()["paths"].values())


@pytest.mark.parametrize(("viewport", "name"), [(DESKTOP, "agent-server-docs-desktop"),
                                                (PHONE, "agent-server-docs-phone")])
def test_the_docs_page_shows_every_operation_offline(docs_server, transactional_db, new_page, shoot, viewport, name):
    page = new_page(viewport=viewport)
    elsewhere = []

    def only_this_server(route):
        if urlsplit(route.request.url).netloc != urlsplit(docs_server.url).netloc:
            elsewhere.append(route.request.url)
            return route.abort()
        return route.continue_()

    page.route("**/*", only_this_server)
    page.goto(f"{docs_server.url}/api/docs")
    page.get_by_role("heading", name="Agent Server API").first.wait_for()
    page.locator(".opblock").nth(operation_count() - 1).wait_for()
    shoot(page, name)

    assert page.locator(".opblock").count() == operation_count()
    assert page.locator(".opblock-summary-path", has_text="/threads/{thread_id}/stream/events").count() == 1
    assert elsewhere == [] and page.problems == []

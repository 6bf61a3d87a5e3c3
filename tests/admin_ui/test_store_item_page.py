"""A store item's own admin page at 1440 and 375 px: its value pretty-printed, nothing to edit, a delete link, and no
page that scrolls sideways (a long value wraps or scrolls inside its own box)."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="Browser tests need the playwright package (requirements-dev.txt)")

from playwright.sync_api import expect  # noqa: E402

from agentruntime.models import StoreItem  # noqa: E402
from tests.admin_ui import support_scene as scene  # noqa: E402
from tests.admin_ui.conftest import PHONE  # noqa: E402

pytestmark = [pytest.mark.live, pytest.mark.browser]

WIDTHS = "() => ({page: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth})"


def test_a_store_item_s_page_shows_its_value_and_fits_a_phone(base, admin_page, shoot):
    scene.store_items()
    item = StoreItem.objects.get(key="favourite-number-and-why-it-matters")
    url = f"{base}/admin/agentruntime/storeitem/{item.pk}/change/"

    for page, name in ((admin_page(), "1440"), (admin_page(PHONE), "375")):
        page.goto(url)
        value = page.locator("pre.store-value")
        expect(value).to_contain_text('"content": "The user\'s favourite number is 7')
        expect(page.get_by_role("link", name="Delete")).to_be_visible()
        assert page.locator("input[name=_save]").count() == 0
        shoot(page, f"store-item-{name}")
        widths = page.evaluate(WIDTHS)
        assert widths["page"] <= widths["viewport"], widths
        assert page.problems == []

"""The admin's store items: listed with their namespace, key, owner and times, searched by namespace or key prefix,
shown with their value pretty-printed, and deleted (with their vectors); never added or edited there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agentruntime.models import StoreItem, StoreVector
from agentruntime.store.django_store import DjangoStore
from tests.agentruntime.store_embedding import DIMS, embed_texts

pytestmark = pytest.mark.django_db

LIST = reverse("admin:agentruntime_storeitem_changelist")


@pytest.fixture
def items():
    store = DjangoStore(scope="workspace:1", index={"dims": DIMS, "embed": embed_texts, "fields": ["content"]})
    store.put(("memories", "alice"), "favourite-number", {"content": "7", "nested": {"why": "a shirt"}})
    store.put(("notes",), "standup", {"content": "moved to 9:30"}, ttl=60)
    return {item.key: item for item in StoreItem.objects.all()}


def test_the_list_shows_each_item_s_namespace_key_owner_and_expiry(admin_client, items):
    page = admin_client.get(LIST).content.decode()

    assert "memories / alice" in page and "favourite-number" in page and "workspace:1" in page
    assert "in 59 min" in page or "in 1 h" in page


@pytest.mark.parametrize(("query", "found", "missing"), [
    ("memories", "favourite-number", "standup"), ("stand", "standup", "favourite-number")])
def test_the_list_searches_by_namespace_or_key_prefix(admin_client, items, query, found, missing):
    page = admin_client.get(LIST, {"q": query}).content.decode()

    assert found in page and missing not in page


def test_an_item_s_page_shows_its_value_pretty_printed_and_offers_no_edit(admin_client, items):
    url = reverse("admin:agentruntime_storeitem_change", args=[items["favourite-number"].pk])
    page = admin_client.get(url).content.decode()

    assert '<pre class="store-value">{\n  &quot;content&quot;: &quot;7&quot;,' in page
    assert 'name="_save"' not in page
    assert admin_client.get(reverse("admin:agentruntime_storeitem_add")).status_code == 403


def test_deleting_an_item_deletes_its_vectors(admin_client, items):
    url = reverse("admin:agentruntime_storeitem_delete", args=[items["favourite-number"].pk])

    assert admin_client.post(url, {"post": "yes"}).status_code == 302

    assert list(StoreItem.objects.values_list("key", flat=True)) == ["standup"]
    assert StoreVector.objects.count() == 1

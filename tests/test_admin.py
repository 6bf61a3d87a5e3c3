"""The admin: keys are created with their secret shown once, and can be revoked."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from accounts.models import ApiKey
from accounts.selectors import api_key_authenticate
from accounts.services import api_key_create

pytestmark = pytest.mark.django_db


def test_the_admin_creates_a_key_and_shows_its_secret_once(admin_client, workspace):
    response = admin_client.post("/admin/accounts/apikey/add/", {
        "name": "ci", "workspaces": [str(workspace.id)], "permissions": ["tracing:read", "tracing:write"],
    })
    assert response.status_code == 302
    [message] = [str(m) for m in get_messages(response.wsgi_request) if "Copy it now" in str(m)]
    raw_key = message.rsplit(" ", 1)[1]
    api_key = api_key_authenticate(raw_key=raw_key)
    assert api_key is not None and api_key.permissions == ["tracing:read", "tracing:write"]
    first_page = admin_client.get(response["Location"])
    assert raw_key in first_page.content.decode()  # the one time it is shown
    detail = admin_client.get(f"/admin/accounts/apikey/{api_key.pk}/change/")
    listing = admin_client.get("/admin/accounts/apikey/")
    assert raw_key not in detail.content.decode() and raw_key not in listing.content.decode()
    assert api_key.hashed_key not in detail.content.decode()


def test_the_admin_revokes_keys(admin_client, workspace):
    api_key, raw_key = api_key_create(workspaces=[workspace])
    response = admin_client.post("/admin/accounts/apikey/", {"action": "revoke", "_selected_action": [api_key.pk]})
    assert response.status_code == 302
    assert ApiKey.objects.get(pk=api_key.pk).revoked_at is not None
    assert api_key_authenticate(raw_key=raw_key) is None


def test_admin_pages_stay_html(admin_client):
    response = admin_client.get("/admin/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")


def test_admin_pages_link_the_sites_icon_which_is_served(client):
    html = client.get("/admin/login/").content.decode()
    assert '<link rel="icon" href="/favicon.ico" sizes="any">' in html
    assert 'href="/static/core/favicon.svg" type="image/svg+xml"' in html
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"

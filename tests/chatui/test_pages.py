"""The chat page's Django side: which template and bundle it serves, the banner, the login requirement."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from chat.pages import bundle_version

pytestmark = pytest.mark.no_postgres_pass


def page_config(response) -> dict:
    match = re.search(r'<script id="chat-config" type="application/json">(.*?)</script>', response.content.decode())
    return json.loads(match.group(1))


@pytest.mark.parametrize("path", ["/", "/chat/"])
def test_the_page_is_served_at_the_root_and_at_chat_with_the_committed_bundle(client, settings, path):
    settings.CHAT_ALLOW_ANONYMOUS = True
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    version = bundle_version()
    assert f'src="/static/chat/chat.js?v={version}"' in html
    assert f'href="/static/chat/chat.css?v={version}"' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "no-store" in response["Cache-Control"]
    config = page_config(response)
    assert config["pagePath"] == path
    assert config["apiUrl"] == "/api"
    assert config["username"] is None


def test_the_banner_shows_while_the_offline_scripted_model_answers(client, settings):
    settings.CHAT_ALLOW_ANONYMOUS = True
    settings.CHAT_MODEL = ""
    response = client.get("/chat/")
    assert b"Offline scripted model in use" in response.content
    assert page_config(response)["offlineModel"] is True

    settings.CHAT_MODEL = "openai:gpt-5.4-mini"
    response = client.get("/chat/")
    assert b"Offline scripted model in use" not in response.content
    assert page_config(response)["offlineModel"] is False


def test_without_anonymous_chat_the_page_sends_visitors_to_the_login(client, settings, db):
    settings.CHAT_ALLOW_ANONYMOUS = False
    response = client.get("/chat/?thread=abc")
    assert response.status_code == 302
    assert response["Location"] == "/chat/login/?next=/chat/%3Fthread%3Dabc"
    assert client.get(response["Location"]).status_code == 200

    get_user_model().objects.create_user("carol", password="carol-secret-1")
    response = client.post("/chat/login/?next=/chat/%3Fthread%3Dabc",
                           {"username": "carol", "password": "carol-secret-1", "next": "/chat/?thread=abc"})
    assert response.status_code == 302 and response["Location"] == "/chat/?thread=abc"
    page = client.get("/chat/?thread=abc")
    assert page.status_code == 200 and page_config(page)["username"] == "carol"
    assert b"Log out" in page.content


def test_a_wrong_password_is_refused_on_the_login_page(client, db):
    get_user_model().objects.create_user("dave", password="dave-secret-1")
    response = client.post("/chat/login/", {"username": "dave", "password": "wrong"})
    assert response.status_code == 200
    assert b"role=\"alert\"" in response.content
    assert "_auth_user_id" not in client.session


def test_a_login_from_elsewhere_never_redirects_off_site(client, db):
    get_user_model().objects.create_user("erin", password="erin-secret-1")
    response = client.post("/chat/login/", {"username": "erin", "password": "erin-secret-1",
                                            "next": "https://evil.example/steal"})
    assert response.status_code == 302 and response["Location"] == "/chat/"


def test_the_site_has_a_favicon_and_the_chat_pages_link_it(client, settings, db):
    settings.CHAT_ALLOW_ANONYMOUS = True
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO directory
    assert "max-age=86400" in response["Cache-Control"]
    for path in ("/chat/", "/chat/login/"):
        html = client.get(path).content.decode()
        assert '<link rel="icon" href="/favicon.ico" sizes="any">' in html
        assert 'href="/static/core/favicon.svg" type="image/svg+xml"' in html

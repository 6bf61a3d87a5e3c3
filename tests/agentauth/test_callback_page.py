"""The frontend callback page and the open-redirect fuzz over every reflected callback parameter."""

from __future__ import annotations

import uuid
from html.parser import HTMLParser
from urllib.parse import quote, urlsplit

import pytest
from django.core.checks import Error
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agentauth.checks import check_frontend_callback_url
from agentauth.frontend import MESSAGES
from tests.agentauth.conftest import query_of

pytestmark = pytest.mark.django_db

FRONTEND = "https://app.example.com/oauth/callback?from=agents"
ALLOWED_KEYS = {"from", "status", "error", "auth_id"}
NASTY = ["//evil.com", "https:evil.com", "/\\evil.com", "\\\\evil.com", "javascript:alert(1)",
         "https://app.example.com.evil.com", "https://app.example.com@evil.com", "%2F%2Fevil.com",
         "http%3A%2F%2Fevil.com", "\r\nLocation: https://evil.com", "data:text/html,<script>alert(1)</script>",
         "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "'; alert(1); '", "..%2f..%2fevil",
         "%0d%0aSet-Cookie:x=y", "\u202egro.live", "//evil.com/%2e%2e", "https://evil.com#@app.example.com"]
reflected = st.one_of(st.sampled_from(NASTY), st.text(max_size=80),
                      st.text(alphabet="/\\:@.%?#&=<>\"' evilcomhtps", max_size=40))
provider_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True)
# Three in four are well-formed, so that most cases reach the redirect instead of stopping at validation.
mostly_valid_provider_ids = st.tuples(st.integers(0, 3), provider_ids, reflected).map(
    lambda drawn: drawn[2] if drawn[0] == 0 else drawn[1])
fuzz_settings = hypothesis_settings(max_examples=500, deadline=None, database=None,
                                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                           HealthCheck.too_slow])


# Every (tag, attribute names) the page may contain, whatever its query string.
PAGE_TAGS = {("html", ("lang",)), ("head", ()), ("meta", ("charset",)), ("meta", ("content", "name")),
             ("title", ()), ("style", ()), ("body", ()), ("main", ("class",)), ("h1", ()), ("p", ()),
             ("p", ("class",)), ("br", ())}


class PageTags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.seen = set()

    def handle_starttag(self, tag, attrs):
        self.seen.add((tag, tuple(sorted(name for name, _ in attrs))))


def assert_on_configured_origin(location: str) -> None:
    parts = urlsplit(location)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "app.example.com", "/oauth/callback")
    assert not parts.fragment
    query = query_of(location)
    assert set(query) <= ALLOWED_KEYS and query["from"] == "agents"
    assert query["status"] in ("completed", "error")
    assert query.get("error", "access_denied") in MESSAGES
    if "auth_id" in query:
        uuid.UUID(query["auth_id"])


def test_callback_redirects_only_ever_go_to_the_configured_origin(browser, settings):
    settings.OAUTH_FRONTEND_CALLBACK_URL = FRONTEND
    statuses = []

    @fuzz_settings
    @given(provider_id=mostly_valid_provider_ids, state=reflected, error=reflected, error_description=reflected)
    def callback_with(provider_id, state, error, error_description):
        path = f"/v2/auth/callback/{quote(provider_id, safe='')}"
        response = browser.get(path, {"state": state, "error": error, "error_description": error_description,
                                      "code": "c"})
        statuses.append(response.status_code)
        assert response.status_code in (302, 404, 422)
        if response.status_code == 302:
            assert_on_configured_origin(response["Location"])
            for value in (state, error, error_description):
                if len(value) > 3:
                    assert quote(value, safe="") not in response["Location"].split("?", 1)[1]

    callback_with()
    # Most cases must reach the redirect, or the fuzz would only prove that validation refuses them.
    assert len(statuses) >= 500 and statuses.count(302) >= len(statuses) * 0.4


@hypothesis_settings(fuzz_settings, max_examples=200)
@given(error=reflected, error_description=reflected)
def test_provider_errors_on_a_valid_state_are_reduced_to_our_codes(flows, browser, settings, oauth_server, error,
                                                                   error_description):
    settings.OAUTH_FRONTEND_CALLBACK_URL = FRONTEND
    if not oauth_server.clients:
        flows.provider()
    pending = flows.authenticate()
    state = query_of(flows.start(browser, pending["auth_id"]))["state"]
    response = browser.get("/v2/auth/callback/acme", {"state": state, "error": error,
                                                      "error_description": error_description})
    if response.status_code == 422:  # a NUL character or an over-long value
        return
    assert_on_configured_origin(response["Location"])
    # Surrounding whitespace is trimmed like every text parameter's; a blank error is no error.
    expected = {"access_denied": "access_denied", "": "code_missing"}.get(error.strip(), "provider_error")
    assert query_of(response["Location"])["error"] == expected
    assert oauth_server.token_request_count() == 0


@fuzz_settings
@given(status=reflected, error=reflected, auth_id=reflected, error_description=reflected, state=reflected,
       provider_id=reflected)
def test_the_callback_page_renders_every_reflected_parameter_inert(client, status, error, auth_id,
                                                                   error_description, state, provider_id):
    response = client.get("/auth/done", {"status": status, "error": error, "auth_id": auth_id, "state": state,
                                         "error_description": error_description, "provider_id": provider_id})
    assert response.status_code == 200
    html = response.content.decode()
    tags = PageTags()
    tags.feed(html)
    assert tags.seen <= PAGE_TAGS, tags.seen - PAGE_TAGS
    for value in (status, error, auth_id, error_description, state, provider_id):
        if len(value) >= 4 and any(ch in value for ch in "<>\"'&"):
            assert value not in html
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert response["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("code", sorted(MESSAGES))
def test_every_error_code_has_a_plain_words_message_on_the_page(client, code):
    html = client.get("/auth/done", {"status": "error", "error": code}).content.decode()
    assert MESSAGES[code].replace("'", "&#x27;") in html and f"Error code: {code}" in html
    assert "Sign-in did not complete" in html


def test_the_page_shows_success_with_the_reference(client):
    auth_id = str(uuid.uuid4())
    html = client.get("/auth/done", {"status": "completed", "auth_id": auth_id}).content.decode()
    assert "Signed in" in html and auth_id in html


def test_an_unknown_error_code_gets_a_generic_message_and_is_not_shown(client):
    html = client.get("/auth/done", {"status": "error", "error": "made_up_code"}).content.decode()
    assert "The sign-in did not complete" in html and "made_up_code" not in html


def test_the_page_only_answers_get_and_head(client):
    assert client.post("/auth/done").status_code == 405


@pytest.mark.parametrize("url", ["/relative/path", "javascript:alert(1)", "https://user@app.example.com/cb",
                                 "https://app.example.com/cb#frag", "ftp://app.example.com/cb", ""])
def test_an_unusable_frontend_callback_url_fails_the_system_check(settings, url):
    settings.OAUTH_FRONTEND_CALLBACK_URL = url
    [error] = check_frontend_callback_url(None)
    assert isinstance(error, Error) and error.id == "agentauth.E001"


def test_the_default_frontend_callback_url_passes_the_system_check():
    assert check_frontend_callback_url(None) == []

"""The Agent Server API's own document (GET /openapi.json) and reference page (GET /docs), in the service under
/api and at a serving process's root; and, against `langgraph dev`, that every operation both serve is in it."""

from __future__ import annotations

import re

import httpx
import pytest
from django.urls import Resolver404, URLPattern, resolve
from openapi_spec_validator import validate

from agentserver import urls as agentserver_urls
from agentserver.api_docs import ASSETS
from agentserver.openapi_document import agent_server_document
from chat.routing import http_routes
from tests.agentserver.test_differential import peer  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
SERVING_URLS = "deployments.serving.urls"
SAMPLE_ID = "7d1f7c2e-0000-4000-8000-000000000001"
# What the peer documents that this server is not meant to serve (issue 12).
NOT_SERVED = re.compile(r"^/(a2a|mcp|metrics)(/|$)|^/threads/\{thread_id\}/storage$|^/threads/prune$")


def operations(document: dict) -> dict[tuple[str, str], dict]:
    return {(method.upper(), path): operation for path, item in document["paths"].items()
            for method, operation in item.items()}


def pattern_operations() -> set[tuple[str, str]]:
    """(method, path) of every view of agentserver.urls, paths written as OpenAPI writes them."""
    found = set()
    for pattern in agentserver_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
        found |= {(method, path) for method in methods_of(pattern.callback)}
    return found


def methods_of(callback) -> set[str]:
    if hasattr(callback, "method_callbacks"):
        return set(callback.method_callbacks)
    return {m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(callback.cls, m)}


def test_the_document_is_valid_openapi_3_and_based_where_it_is_served(client):
    response = client.get("/api/openapi.json")

    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    document = response.json()
    validate(document)
    assert document["openapi"].startswith("3.") and document["info"]["title"] == "Agent Server API"
    assert document["servers"] == [{"url": "/api"}]


def test_the_document_lists_every_view_of_the_agent_server_urls_with_its_operation_id():
    documented = operations(agent_server_document())

    for key in pattern_operations():
        assert key in documented, key
        assert documented[key]["operationId"], key
    ids = [operation["operationId"] for operation in documented.values()]
    assert len(ids) == len(set(ids))


def test_it_documents_the_streaming_protocol_routes_and_the_agent_servers_error_body():
    documented = operations(agent_server_document())

    assert documented["POST", "/threads/{thread_id}/commands"]["operationId"] == "protocol_thread_command_post"
    assert "text/event-stream" in documented["POST", "/threads/{thread_id}/stream/events"]["responses"]["200"][
        "content"]
    missing = documented["GET", "/threads/{thread_id}"]["responses"]["404"]
    assert missing["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorResponse"}
    assert documented["GET", "/threads/{thread_id}"]["security"] == [{"ApiKey": []}]
    assert documented["GET", "/ok"]["security"] == []


def test_the_services_rest_schema_still_leaves_the_agent_server_out(client):
    schema = client.get("/api/schema/?format=json").json()

    assert not any(path.startswith("/api/threads") or path == "/api/openapi.json" for path in schema["paths"])


@pytest.mark.urls(SERVING_URLS)
@pytest.mark.parametrize("prefix", ["", "/api"])
def test_a_serving_process_serves_it_at_its_root_and_under_api(client, prefix):
    document = client.get(f"{prefix}/openapi.json").json()

    assert document["servers"] == [{"url": prefix or "/"}]
    assert operations(document).keys() == operations(agent_server_document()).keys()


@pytest.mark.urls(SERVING_URLS)
def test_behind_a_deployments_url_the_forwarded_prefix_is_the_base_and_a_strange_one_is_ignored(client):
    forwarded = client.get("/openapi.json", HTTP_X_FORWARDED_PREFIX="/deployments/abc").json()
    strange = client.get("/openapi.json", HTTP_X_FORWARDED_PREFIX="javascript:alert(1)").json()

    assert forwarded["servers"] == [{"url": "/deployments/abc"}]
    assert strange["servers"] == [{"url": "/"}]


@pytest.mark.parametrize("base", ["/api/docs"])
def test_the_docs_page_loads_its_scripts_from_itself_so_it_works_offline_and_under_any_prefix(client, base):
    page = client.get(base)

    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    assert '"openapi.json"' in html
    assert "cdn" not in html.lower() and "https://" not in html
    for name, content_type in ASSETS.items():
        assert f'"docs?asset={name}"' in html
        asset = client.get(base, {"asset": name})
        assert asset.status_code == 200 and asset["Content-Type"].startswith(content_type)
        assert b"".join(asset.streaming_content)


def test_an_unknown_docs_asset_is_a_404_in_the_agent_servers_shape(client):
    for name in ["../settings.py", "LICENSE", "swagger-ui-bundle.js.map"]:
        response = client.get("/api/docs", {"asset": name})
        assert response.status_code == 404 and response.json() == {"detail": "Not Found"}


@pytest.mark.urls(SERVING_URLS)
def test_a_serving_process_serves_the_docs_page_at_its_root(client):
    assert client.get("/docs").status_code == 200
    assert client.get("/docs", {"asset": "swagger-ui.css"}).status_code == 200


def served_here(method: str, path: str) -> bool:
    """Whether a serving process routes the operation at its root: to a view of agentserver.urls, or (POST) to a
    consumer."""
    concrete = re.sub(r"\{[^}]+\}", SAMPLE_ID, path).lstrip("/")
    consumers = http_routes(django_app=None, at_root_too=True)
    # A consumer serves the path when it takes the whole segment for the thread id (the routes with `.+` only
    # refuse thread ids that can name no thread).
    if method == "POST" and any((match := route.pattern.match(concrete)) and
                                match[2].get("thread_id") == SAMPLE_ID for route in consumers):
        return True
    try:
        match = resolve("/" + concrete, urlconf=SERVING_URLS)
    except Resolver404:
        return False
    return method in methods_of(match.func)


@pytest.mark.live
@pytest.mark.no_postgres_pass
def test_every_operation_langgraph_dev_documents_and_this_server_serves_is_documented_with_its_id(peer):  # noqa: F811
    theirs = operations(httpx.get(f"{peer}/openapi.json", timeout=30, trust_env=False).json())
    ours = operations(agent_server_document())
    wanted = {key for key in theirs if not NOT_SERVED.search(key[1])}

    served = {key for key in wanted if served_here(*key)}
    assert served, "nothing in common: the peer's document was not read"
    assert served <= ours.keys(), sorted(served - ours.keys())
    for key in served:
        assert ours[key]["operationId"] == theirs[key]["operationId"], key
    print("Documented by langgraph dev, not served here yet:", *sorted(wanted - served), sep="\n  ")

"""Who owns a thread: API-key workspaces, logged-in users and the anonymous owner never see each other's threads."""

from __future__ import annotations

import uuid

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient

from agentruntime.models import ChatThread
from tests.chat.support_chat import command, live_chat_server, run_to_end

pytestmark = pytest.mark.live
chat_server = live_chat_server()


@pytest.fixture
def callers(base, make_client, workspace, other_workspace):
    """Header sets for two workspaces' keys, two users' sessions and the anonymous caller."""

    def session(username):
        user = get_user_model().objects.create_user(username=username, password="pw-not-used")
        client = DjangoClient()
        client.force_login(user)
        return {"Cookie": f"sessionid={client.cookies['sessionid'].value}", "Origin": base}

    return {
        "key_a": {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key},
        "key_b": {"X-Api-Key": make_client(other_workspace, permissions=["chat:use"]).raw_key},
        "user_a": session("alice"),
        "user_b": session("bob"),
        "anonymous": {},
    }


AGENT_SERVER_ROUTES = {"get state", "post state", "history", "rename", "delete", "cancel"}


def attempts(base: str, thread: str, headers: dict) -> dict[str, httpx.Response]:
    """Every chat route on `thread`, as the caller with `headers`."""
    url = f"{base}/api/threads/{thread}"
    with httpx.stream("POST", f"{url}/stream", json={"channels": ["values"]}, headers=headers) as stream:
        stream.read()
        streamed = stream
    return {
        "get state": httpx.get(f"{url}/state", headers=headers),
        "post state": httpx.post(f"{url}/state", json={"values": {"messages": []}}, headers=headers),
        "history": httpx.post(f"{url}/history", json={}, headers=headers),
        "commands": httpx.post(f"{url}/commands", json={"id": 1, "method": "state.get", "params": {}},
                               headers=headers),
        "run.start": httpx.post(f"{url}/commands", json={"id": 2, "method": "run.start", "params": {
            "input": {"messages": [{"type": "human", "content": "hi"}]}}}, headers=headers),
        "cancel": httpx.post(f"{url}/runs/{uuid.uuid4()}/cancel", headers=headers),
        "stream": streamed,
        "rename": httpx.patch(url, json={"title": "Taken over"}, headers=headers),
        "branches": httpx.get(f"{url}/branches", headers=headers),
        "delete": httpx.delete(url, headers=headers),
    }


@pytest.mark.parametrize("owner", ["key_a", "user_a", "anonymous"])
def test_someone_elses_thread_is_404_on_every_route_exactly_like_a_missing_one(base, callers, owner):
    thread = str(uuid.uuid4())
    run_to_end(base, thread, "calculate 1 + 2", headers=callers[owner])
    for intruder in [name for name in callers if name != owner]:
        for route, response in attempts(base, thread, callers[intruder]).items():
            assert response.status_code == 404, (owner, intruder, route, response.text)
            # State, history, rename and delete are the Agent Server API's routes, in its shape.
            expected = ({"detail": f"Thread with ID {thread} not found"} if route in AGENT_SERVER_ROUTES
                        else {"error": "not_found", "message": f"Thread {thread} not found"})
            assert response.json() == expected, route
    # The owner still has everything, under its own title.
    state = httpx.get(f"{base}/api/threads/{thread}/state", headers=callers[owner]).json()
    assert state["values"]["messages"][0]["content"] == "calculate 1 + 2"
    listed = httpx.get(f"{base}/api/threads", headers=callers[owner]).json()
    assert [t["title"] for t in listed if t["id"] == thread] == ["calculate 1 + 2"]


def test_each_caller_lists_only_its_own_threads(base, callers):
    created = {}
    for name, headers in callers.items():
        created[name] = str(uuid.uuid4())
        httpx.post(f"{base}/api/threads/{created[name]}/state", json={"values": {"messages": []}}, headers=headers)
    for name, headers in callers.items():
        assert [t["id"] for t in httpx.get(f"{base}/api/threads", headers=headers).json()] == [created[name]]


def test_a_key_without_chat_use_is_403_and_a_bad_key_401(base, make_client, workspace):
    headers = {"X-Api-Key": make_client(workspace, permissions=["tracing:read"]).raw_key}
    response = httpx.get(f"{base}/api/threads", headers=headers)
    assert response.status_code == 403 and response.json()["error"] == "permission_denied"
    refused = command(base, str(uuid.uuid4()), "run.start", {"input": {}}, headers=headers)
    assert refused.status_code == 200 and refused.json()["error"] == "permission_denied"
    response = httpx.get(f"{base}/api/threads", headers={"X-Api-Key": "lgk_nope_nope"})
    assert response.status_code == 401 and response.json()["error"] == "unauthenticated"


def test_a_key_names_its_workspace_with_x_tenant_id(base, make_client, workspace, other_workspace):
    client = make_client(workspace, permissions=["chat:use"], tenant=False, workspaces=[workspace, other_workspace])
    ambiguous = httpx.get(f"{base}/api/threads", headers={"X-Api-Key": client.raw_key})
    assert ambiguous.status_code == 403
    named = httpx.get(f"{base}/api/threads", headers={"X-Api-Key": client.raw_key,
                                                      "X-Tenant-Id": str(other_workspace.id)})
    assert named.status_code == 200


def test_a_cross_origin_cookie_write_is_refused(base, callers):
    thread = str(uuid.uuid4())
    cookie = {"Cookie": callers["user_a"]["Cookie"]}
    evil = {**cookie, "Origin": "https://evil.example"}
    response = httpx.post(f"{base}/api/threads/{thread}/state", json={"values": {"messages": []}}, headers=evil)
    assert response.status_code == 403 and "evil.example" in response.json()["detail"]
    assert httpx.post(f"{base}/api/threads/{thread}/state", json={}, headers=cookie).status_code == 403
    refused = command(base, thread, "run.start", {"input": {}}, headers=evil)
    assert refused.status_code == 200 and refused.json()["error"] == "permission_denied"
    assert httpx.get(f"{base}/api/threads/{thread}/state", headers=cookie).status_code == 404

    same_site = {**cookie, "Referer": f"{base}/chat"}
    assert httpx.post(f"{base}/api/threads/{thread}/state", json={}, headers=same_site).status_code == 200
    assert httpx.delete(f"{base}/api/threads/{thread}", headers=evil).status_code == 403
    assert httpx.delete(f"{base}/api/threads/{thread}", headers=callers["user_a"]).status_code == 204


def test_a_browser_page_elsewhere_cannot_drive_the_anonymous_owner_either(base):
    response = httpx.post(f"{base}/api/threads/{uuid.uuid4()}/state", json={},
                          headers={"Origin": "https://evil.example"})
    assert response.status_code == 403


@pytest.mark.parametrize("tenant", ["other", "unknown"])
def test_an_x_tenant_id_the_key_may_not_use_is_403_on_every_route(base, make_client, workspace, other_workspace,
                                                                  tenant):
    named = other_workspace.id if tenant == "other" else uuid.uuid4()
    headers = {"X-Api-Key": make_client(workspace, permissions=["chat:use"]).raw_key, "X-Tenant-Id": str(named)}
    thread = str(uuid.uuid4())
    responses = {**attempts(base, thread, headers), "list": httpx.get(f"{base}/api/threads", headers=headers)}
    for route, response in responses.items():
        if route in ("commands", "run.start"):
            assert response.status_code == 200, (route, response.text)
            assert response.json()["type"] == "error" and response.json()["error"] == "permission_denied"
        else:
            assert response.status_code == 403, (route, response.text)
            message = "This API key may not use the workspace named in X-Tenant-Id."
            # The Agent Server API's routes answer in its shape, the protocol's in the protocol's.
            expected = ({"detail": message} if route in AGENT_SERVER_ROUTES
                        else {"error": "permission_denied", "message": message})
            assert response.json() == expected, route
    assert not ChatThread.objects.filter(pk=thread).exists()


@pytest.mark.parametrize("change", ["password changed", "deactivated"])
def test_a_session_stops_authenticating_once_its_user_changes_password_or_is_deactivated(base, callers, change):
    thread = str(uuid.uuid4())
    run_to_end(base, thread, "calculate 1 + 2", headers=callers["user_a"])
    user = get_user_model().objects.get(username="alice")
    if change == "password changed":
        user.set_password("a-new-one")
    else:
        user.is_active = False
    user.save()
    # The session now counts for nobody: with CHAT_ALLOW_ANONYMOUS, the caller is the anonymous owner.
    for route, response in attempts(base, thread, callers["user_a"]).items():
        assert response.status_code == 404, (change, route, response.text)
    assert httpx.get(f"{base}/api/threads", headers=callers["user_a"]).json() == []

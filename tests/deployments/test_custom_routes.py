"""langgraph.json's `http` section on a deployed revision, called through the deployment's URL: the project's own
Starlette app beside the Agent Server API and behind the same API key, overriding a built-in path, disabled route
groups answering 404, CORS per `http.cors`, and a wrong `http.app` failing the build with a clear message."""

from __future__ import annotations

import httpx
import pytest

from accounts.services import api_key_create
from deployments import langgraph_config
from deployments.models import Revision
from tests.deployments.support_projects import CONFIG, deploy_project, make_project
from tests.deployments.test_live import Api
from tests.deployments.test_pipeline import deploy_variant, logs
from tests.support_processes import wait_for

WEBAPP = '''
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route

STARTED = []


async def hello(request):
    return JSONResponse({"hello": "world", "started": STARTED, "api_key_seen": "x-api-key" in request.headers},
                        headers={"X-Custom": "1"})


async def info(request):
    return JSONResponse({"custom_info": True})


class Stamp(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        response = await call_next(request)
        response.headers["X-Project-Middleware"] = "yes"
        return response


@asynccontextmanager
async def lifespan(app):
    STARTED.append("started")
    yield


app = Starlette(routes=[Route("/hello", hello), Route("/info", info)], middleware=[Middleware(Stamp)],
                lifespan=lifespan)
'''
ORIGIN = "https://app.example"
HTTP = {
    "app": "./src/agent/webapp.py:app",
    "disable_threads": True,
    "disable_store": True,
    "cors": {"allow_origins": [ORIGIN], "allow_methods": ["GET", "POST"], "allow_headers": ["X-Api-Key"],
             "allow_credentials": True, "expose_headers": ["X-Custom"], "max_age": 120},
}


# The project's app is Starlette, which the runtime does not provide: the project names it, as it must anywhere.
WITH_STARLETTE = {**CONFIG, "dependencies": [*CONFIG["dependencies"], "starlette"]}


def _deploy(api: Api, tmp_path, config: dict) -> str:
    project = make_project(tmp_path / "project", config=config, files={"src/agent/webapp.py": WEBAPP})
    # Webhooks pass the egress guard: the tests' receiver on loopback is allowlisted.
    return deploy_project(api, project, name="custom-routes",
                          secrets=[{"name": "EGRESS_ALLOWLIST", "value": "127.0.0.1"}])


@pytest.mark.live
def test_a_project_app_is_served_beside_the_agent_server_behind_the_deployment_key(stack_factory, workspace,
                                                                                  tmp_path, webhook_receiver):
    owner = api_key_create(workspaces=[workspace])[1]
    no_chat = api_key_create(workspaces=[workspace], permissions=["deployments:read"])[1]
    stack = stack_factory()
    custom_url = _deploy(Api(stack.url, owner), tmp_path, {**WITH_STARLETTE, "http": HTTP})
    with httpx.Client(base_url=custom_url, timeout=30, trust_env=False) as http:
        keyed = {"X-Api-Key": owner}
        hello = http.get("/hello", headers=keyed)
        assert hello.status_code == 200, hello.text
        # The project's lifespan ran, its middleware wraps its routes, and the caller's key never reaches it.
        assert hello.json() == {"hello": "world", "started": ["started"], "api_key_seen": False}
        assert hello.headers["X-Project-Middleware"] == "yes"
        assert http.get("/hello").status_code == 401
        assert http.get("/hello", headers={"X-Api-Key": no_chat}).status_code == 403

        # The project's /info takes precedence over the built-in one; /openapi.json stays the server's.
        assert http.get("/info", headers=keyed).json() == {"custom_info": True}
        assert "paths" in http.get("/openapi.json", headers=keyed).json()
        # The built-in routes still answer, through the project's middleware too.
        search = http.post("/assistants/search", json={}, headers=keyed)
        assert search.status_code == 200 and search.json()[0]["graph_id"] == "agent"
        assert search.headers["X-Project-Middleware"] == "yes"
        assert http.post("/runs/wait", json={"assistant_id": "agent", "input": {}}, headers=keyed).status_code == 200
        # Disabled groups answer 404, under /api too; unknown paths are the project's app's 404.
        assert http.post("/threads", json={}, headers=keyed).status_code == 404
        assert http.post("/api/threads/search", json={}, headers=keyed).status_code == 404
        assert http.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {}},
                        headers=keyed).status_code == 404
        assert http.get("/no-such-path", headers=keyed).status_code == 404
        # Webhooks are on (this section does not disable them).
        url, received, arrived = webhook_receiver
        run = http.post("/runs", json={"assistant_id": "agent", "input": {}, "webhook": url}, headers=keyed)
        assert run.status_code == 200 and arrived.wait(60)
        assert received[0]["run_id"] == run.json()["run_id"]

        _cors_follows_http_cors(http, keyed)


def _cors_follows_http_cors(http: httpx.Client, keyed: dict) -> None:
    # A browser's preflight carries no key: the revision answers it from http.cors alone.
    preflight = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "x-api-key, content-type"}
    allowed = http.options("/hello", headers=preflight)
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert allowed.headers["Access-Control-Allow-Credentials"] == "true"
    assert allowed.headers["Access-Control-Allow-Methods"] == "GET, POST"
    assert allowed.headers["Access-Control-Max-Age"] == "120"
    assert "x-api-key" in allowed.headers["Access-Control-Allow-Headers"]
    evil = http.options("/assistants/search", headers={**preflight, "Origin": "https://evil.example"})
    assert evil.status_code == 400 and "Access-Control-Allow-Origin" not in evil.headers
    assert http.options("/hello", headers={**preflight, "Access-Control-Request-Method": "DELETE"}).status_code == 400

    simple = http.get("/hello", headers={**keyed, "Origin": ORIGIN})
    assert simple.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert simple.headers["Access-Control-Expose-Headers"] == "X-Custom"
    builtin = http.post("/assistants/search", json={}, headers={**keyed, "Origin": ORIGIN})
    assert builtin.headers["Access-Control-Allow-Origin"] == ORIGIN
    foreign = http.get("/hello", headers={**keyed, "Origin": "https://evil.example"})
    assert foreign.status_code == 200 and "Access-Control-Allow-Origin" not in foreign.headers


@pytest.mark.live
def test_mount_prefix_moves_every_route_under_it_and_disable_meta_frees_the_meta_paths(stack_factory, workspace,
                                                                                       tmp_path, webhook_receiver):
    owner = api_key_create(workspaces=[workspace])[1]
    stack = stack_factory()
    http_section = {"app": "./src/agent/webapp.py:app", "mount_prefix": "/my-api", "disable_meta": True,
                    "disable_assistants": True, "disable_webhooks": True}
    custom_url = _deploy(Api(stack.url, owner), tmp_path, {**WITH_STARLETTE, "http": http_section})
    with httpx.Client(base_url=custom_url, timeout=30, trust_env=False, headers={"X-Api-Key": owner}) as http:
        assert http.get("/my-api/hello").json()["hello"] == "world"
        assert http.get("/hello").status_code == 404
        assert http.post("/my-api/threads", json={}).status_code == 200
        assert http.post("/threads", json={}).status_code == 404
        assert http.post("/my-api/assistants/search", json={}).status_code == 404
        # disable_meta: no /openapi.json or /docs, the project's /info, and /ok still answers (at the root too).
        assert http.get("/my-api/openapi.json").status_code == 404
        assert http.get("/my-api/docs").status_code == 404
        assert http.get("/my-api/info").json() == {"custom_info": True}
        assert http.get("/my-api/ok").json()["ok"] is True
        assert http.get("/ok").json()["ok"] is True
        # No http.cors: a preflight without a key is refused as before.
        preflight = http.options("/my-api/hello", headers={"X-Api-Key": "", "Origin": ORIGIN,
                                                           "Access-Control-Request-Method": "GET"})
        assert preflight.status_code == 401
        _webhooks_are_not_called(http, webhook_receiver)


def _webhooks_are_not_called(http: httpx.Client, webhook_receiver) -> None:
    """disable_webhooks: the run executes, its webhook is not called. A stateless run nobody waits for has its
    thread removed by the after-run hook that follows the webhook's: once it is gone, a webhook would have come."""
    url, received, _ = webhook_receiver
    run = http.post("/my-api/runs", json={"assistant_id": "agent", "input": {}, "webhook": url}).json()
    assert wait_for(lambda: http.get(f"/my-api/threads/{run['thread_id']}").status_code == 404, timeout=60)
    assert received == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("http, cause", [
    ({"app": "./src/agent/webapp.py:missing"}, "http.app"),
    ({"app": "./src/agent/webapp.py:Route"}, "not a Starlette or FastAPI application"),
    ({"app": "./src/agent/nope.py:app"}, "http.app: the file ./src/agent/nope.py does not exist."),
    ({"cors": {"allow_origins": "https://app.example"}}, "http.cors.allow_origins must be a list of strings"),
])
def test_a_wrong_http_section_fails_the_build_with_a_message_naming_the_key(internal_deployment, tmp_path, run_jobs,
                                                                            http, cause):
    revision = deploy_variant(internal_deployment, tmp_path, run_jobs, config={**WITH_STARLETTE, "http": http},
                              files={"src/agent/webapp.py": WEBAPP})
    assert revision.status == "BUILD_FAILED"
    assert cause in revision.status_message, revision.status_message
    if http.get("app", "").endswith(":missing"):
        assert "has no attribute 'missing'" in revision.status_message
    assert Revision.objects.get(id=revision.id).deployment.active_revision is None
    assert logs(revision.id, "build")


def test_the_http_section_is_checked_before_the_build(tmp_path):
    root = make_project(tmp_path / "p", config={**CONFIG, "http": {
        "app": "./webapp.py:app", "disable_meta": True, "configurable_headers": {}, "cors": {"max_age": 60}}},
        files={"webapp.py": WEBAPP})
    config = langgraph_config.load(source_root=root, config_path="langgraph.json")
    assert config.http["app"] == "./webapp.py:app"
    assert config.http["disable_meta"] is True and config.http["cors"] == {"max_age": 60}
    assert any("configurable_headers" in warning for warning in config.warnings)
    for bad, message in [({"disable_runs": "yes"}, "http.disable_runs must be true or false"),
                         ({"app": "../outside.py:app"}, "points outside the project"),
                         ({"app": "webapp"}, "http.app: expected"),
                         ({"cors": {"allow_origin_regex": "("}}, "not a valid regular expression"),
                         ({"cors": {"allow_all": True}}, "http.cors.allow_all is not a CORS setting"),
                         ({"mount_prefix": "/api/"}, "http.mount_prefix must start with '/' and not end with '/'"),
                         ([], "\"http\" must be an object")]:
        make_project(root, config={**CONFIG, "http": bad}, files={"webapp.py": WEBAPP})
        with pytest.raises(langgraph_config.ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
            langgraph_config.load(source_root=root, config_path="langgraph.json")

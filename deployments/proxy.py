"""The stable URL of a deployment: `{PUBLIC_BASE_URL}/deployments/{id}/...`, proxied to the active revision.

The active revision is looked up for every request, so a switch is atomic: a request goes either
to the old revision or to the new one. A revision served by several processes (its replicas) gets
requests in turn, and one whose replica does not accept the connection (it died; nothing was sent)
is sent to the next replica, so a dead replica costs no failed call. Responses are streamed chunk
by chunk (SSE passes through as it is produced), and a client that disconnects closes the upstream
request. Callers need an API key of the deployment's workspace with `chat:use`; the key, tenant
header and cookies are not passed on to the tenant's code, which gets a per-revision token proving
the request came from here.

A CORS preflight carries no API key (browsers send none): it is passed on marked X-Serving-Preflight, and the
revision answers it from langgraph.json's http.cors alone, without running the project's code or the API.
"""

from __future__ import annotations

import itertools
import logging

import httpx
from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import APIException

from accounts.authentication import principal_from_headers
from core.exceptions import RequestValidationError, ServiceError
from core.rest_errors import error_response
from deployments import selectors
from deployments.serializers import parse_path_uuid
from deployments.services import get_runner

log = logging.getLogger("deployments.proxy")

# Hop-by-hop headers (RFC 9110 §7.6.1) and what must not reach the tenant's process.
_DROP_REQUEST = {"host", "connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer",
                 "transfer-encoding", "upgrade", "content-length", "x-api-key", "x-tenant-id", "cookie",
                 "authorization", "x-serving-token", "x-serving-preflight"}
_DROP_RESPONSE = {"connection", "keep-alive", "transfer-encoding", "upgrade", "trailer", "content-length",
                  "set-cookie"}
MISSING_KEY = "Missing API key: send it in the X-Api-Key header."
# A browser opening the deployment's /docs sends no key: say where the same page needs none.
DOCS_NEED_KEY = (f"{MISSING_KEY} A browser sends none: the same reference page (the Agent Server API's operations) "
                 "needs no key at /api/docs, and this deployment's own document is at: "
                 "curl -H 'X-Api-Key: <key>' <deployment URL>/openapi.json")
STARTING = ("Deployment {} is starting: its server does not accept connections yet. Retry in a moment "
            "(Retry-After).")
_TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0)
# Whose turn it is among a revision's replicas (one counter for all revisions: only the spread matters).
_turns = itertools.count()


def _is_unauthenticated_preflight(request) -> bool:
    return (request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers
            and "Origin" in request.headers and not request.headers.get("X-Api-Key"))


def _resolve(request, deployment_id: str):
    """Authenticate the caller and find the revision to send the request to (runs in a thread)."""
    if _is_unauthenticated_preflight(request):
        return _preflight_upstream(deployment_id)
    principal = principal_from_headers(request.headers.get("X-Api-Key"), request.headers.get("X-Tenant-Id"))
    if principal is None:
        raise _Reject(401, DOCS_NEED_KEY if request.path.endswith(f"{deployment_id}/docs") else MISSING_KEY)
    workspace = principal.workspace
    if not principal.has_permission("chat:use"):
        raise _Reject(403, "This API key lacks the 'chat:use' permission.")
    target = selectors.proxy_target(workspace=workspace, deployment_id=parse_path_uuid(deployment_id, "deployment_id"))
    upstream = get_runner().upstream(target.revision) if target.revision else None
    if upstream is None:
        raise _Reject(503, f"Deployment ID {target.deployment.id} has no revision deployed yet.")
    return upstream


def _preflight_upstream(deployment_id: str):
    """The revision a preflight goes to; a caller without a key learns nothing else (every other case is 401)."""
    try:
        target = selectors.proxy_target(workspace=None, deployment_id=parse_path_uuid(deployment_id, "deployment_id"))
    except (ServiceError, RequestValidationError):
        raise _Reject(401, MISSING_KEY) from None
    upstream = get_runner().upstream(target.revision) if target.revision else None
    if upstream is None:
        raise _Reject(401, MISSING_KEY)
    return upstream


class _Reject(Exception):
    def __init__(self, status: int, detail: str):
        self.status, self.detail = status, detail


@csrf_exempt
async def deployment_proxy(request, deployment_id: str, subpath: str | None = None):
    try:
        upstream = await sync_to_async(_resolve)(request, deployment_id)
    except _Reject as exc:
        return error_response(exc.status, exc.detail)
    except RequestValidationError as exc:
        return error_response(422, exc.errors)
    except (ServiceError, APIException) as exc:
        return error_response(exc.status_code, str(exc.detail))
    client = httpx.AsyncClient(timeout=_TIMEOUT, trust_env=False)
    try:
        try:
            response = await _send(client, request, upstream, deployment_id, subpath)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            # No replica accepted it, so nothing was sent: the revision may have been replaced and stopped between
            # the lookup and the connect (a redeploy). The deployment's active revision now is another: try it once.
            retry = await sync_to_async(_resolve)(request, deployment_id)
            if retry == upstream:
                raise
            response = await _send(client, request, retry, deployment_id, subpath)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        # The active revision's processes are not up yet (started, or restarted after the service was): say so.
        await client.aclose()
        log.info("deployment %s is starting: %s", deployment_id, exc)
        return error_response(503, STARTING.format(deployment_id), headers={"Retry-After": "1"})
    except (httpx.HTTPError, _Reject, ServiceError) as exc:
        await client.aclose()
        log.warning("proxy to deployment %s failed: %s", deployment_id, exc)
        return error_response(502, "The deployment's server did not answer.")
    return _stream(response, client)


async def _send(client: httpx.AsyncClient, request, upstream, deployment_id: str, subpath: str | None):
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
    headers.update(upstream.headers)
    if _is_unauthenticated_preflight(request):
        headers["X-Serving-Preflight"] = "1"
    headers["X-Forwarded-Prefix"] = f"/deployments/{deployment_id}"
    upstream_request = None
    for base_url in _rotation(upstream.base_urls):
        upstream_request = client.build_request(request.method, base_url + (subpath or "/"), params=request.GET,
                                                headers=headers, content=request.body)
        try:
            return await client.send(upstream_request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # Nothing reached this replica (it is down, or restarting): the next one gets the request.
            log.info("replica %s did not accept the connection (%s); trying the next one", base_url, exc)
    raise httpx.ConnectError("no replica accepted the connection", request=upstream_request)


def _rotation(base_urls: tuple[str, ...]) -> list[str]:
    """The replicas in the order to try them: round-robin (each request starts at the next one), then the others."""
    start = next(_turns) % len(base_urls)
    return [*base_urls[start:], *base_urls[:start]]


def _stream(response: httpx.Response, client: httpx.AsyncClient) -> StreamingHttpResponse:
    async def body():
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            log.info("upstream stream ended early: %s", exc)
        finally:
            await response.aclose()
            await client.aclose()

    proxied = StreamingHttpResponse(body(), status=response.status_code)
    for name, value in response.headers.multi_items():
        if name.lower() not in _DROP_RESPONSE:
            proxied[name] = value
    return proxied

"""CORS for the Agent Server API, so that a browser app on another origin (LangGraph's `useStream`, agent-chat-ui)
can call it with an API key, as `langgraph dev` lets any origin do.

Off unless AGENT_SERVER_CORS_ALLOW_ORIGINS lists origins ("*" for any). Only the Agent Server views answer with
CORS headers; credentials are never allowed, so cookies (the chat page's session) stay same-site and a
cookie-authenticated write from another origin is still refused (agentruntime.access.check_write_origin).
"""

from __future__ import annotations

from django.conf import settings

# What a page may read: the run id of a streamed run (Content-Location, read by the SDKs' onRunCreated), the
# reconnect path of a stream (Location), and the pagination of searches.
EXPOSED_HEADERS = "Content-Location, Location, X-Pagination-Total, X-Pagination-Next"
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
PREFLIGHT_MAX_AGE = "600"


def origin_allowed(origin: str | None) -> bool:
    allowed = settings.AGENT_SERVER_CORS_ALLOW_ORIGINS
    return bool(origin) and ("*" in allowed or origin in allowed)


def is_preflight(request) -> bool:
    return request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers


def add_headers(request, response) -> None:
    """The CORS headers of an answer to a request from an allowed origin (nothing for others)."""
    origin = request.headers.get("Origin")
    if not origin_allowed(origin):
        return
    response["Access-Control-Allow-Origin"] = origin
    response["Vary"] = ", ".join(filter(None, [response.get("Vary"), "Origin"]))
    if is_preflight(request):
        response["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        requested = request.headers.get("Access-Control-Request-Headers")
        if requested:
            response["Access-Control-Allow-Headers"] = requested
        response["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    else:
        response["Access-Control-Expose-Headers"] = EXPOSED_HEADERS

"""The Agent Server API's own OpenAPI document, generated from agentserver.urls (GET /openapi.json).

The service's REST schema (/api/schema/) leaves these views out (`documented_separately`): they answer in the
Agent Server's shapes, so they get their own document. Every view of agentserver.urls is in it, with the
`operation_id` of its `@extend_schema` (the same as `langgraph dev`'s /openapi.json where the operation is the
same), plus the Agent Streaming Protocol's two routes, which Channels consumers answer beside the views.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from typing import Any

from drf_spectacular.settings import patched_settings

from agentserver.api import AGENT_SERVER_API_VERSION
from agentserver.http import AgentServerApi
from core.openapi_generation import ServiceSchemaGenerator

# drf-spectacular describes a view without a docstring by its base class's.
INHERITED_DESCRIPTION = inspect.cleandoc(AgentServerApi.__doc__ or "")
ERROR = {"$ref": "#/components/schemas/ErrorResponse"}
STATUS_TEXT = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
               413: "Payload Too Large", 422: "Validation Error"}
TAGS = [
    {"name": "Assistants", "description": "An assistant is a graph with its own configuration and metadata."},
    {"name": "Threads", "description": "A thread holds the state (checkpoints) its runs build up."},
    {"name": "Thread Runs", "description": "A run executes an assistant's graph on a thread."},
    {"name": "Stateless Runs", "description": "A run executes an assistant's graph on a temporary thread."},
    {"name": "Crons", "description": "A cron creates a run of its assistant at every tick of its schedule."},
    {"name": "Store", "description": "Items the graphs and their clients keep across threads, by namespace."},
    {"name": "Streaming", "description": "The Agent Streaming Protocol: commands and a thread's event stream."},
    {"name": "System", "description": "Health, server information and this document."},
]
SETTINGS = {
    "TITLE": "Agent Server API",
    "DESCRIPTION": "LangChain's Agent Server API (langgraph-api 0.16), as this server serves it. Authenticate with "
                   "an API key that has the `chat:use` permission in `X-Api-Key`.\n\nThe service's own REST API "
                   "(deployments, bulk exports, traces, OAuth, workspaces) has its reference at "
                   "[/api/reference/](/api/reference/).",
    "VERSION": AGENT_SERVER_API_VERSION,
    "PREPROCESSING_HOOKS": [],
    "POSTPROCESSING_HOOKS": [],
    "SCHEMA_PATH_PREFIX": "",
}
_PROTOCOL_COMMAND = {
    "type": "object", "required": ["id", "method"], "additionalProperties": True,
    "properties": {
        "id": {"type": "integer", "minimum": 0, "description": "Chosen by the client; the response repeats it."},
        "method": {"type": "string", "example": "run.start",
                   "description": "`run.start`, `input.respond`, `run.cancel`, `agent.getTree`, …"},
        "params": {"type": "object", "additionalProperties": True},
    },
}
_PROTOCOL_RESPONSE = {
    "type": "object", "required": ["type", "id"], "additionalProperties": True,
    "description": "`{type: \"success\", id, result}` or `{type: \"error\", id, error, message}`; both with 200.",
    "properties": {"type": {"type": "string", "enum": ["success", "error"]},
                   "id": {"type": "integer", "nullable": True}, "result": {"type": "object"},
                   "error": {"type": "string"}, "message": {"type": "string"}},
}
_PROTOCOL_SUBSCRIPTION = {
    "type": "object", "required": ["channels"], "additionalProperties": True,
    "properties": {
        "channels": {"type": "array", "minItems": 1, "items": {"type": "string"},
                     "description": "`values`, `updates`, `messages`, `tools`, `lifecycle`, `input`, `tasks`, "
                                    "`custom` or `custom:<name>`."},
        "namespaces": {"type": "array", "items": {"type": "array", "items": {"type": "string"}},
                       "description": "Only events under one of these namespace prefixes."},
        "depth": {"type": "integer", "minimum": 0, "description": "How far below a prefix events may be."},
        "since": {"type": "integer", "minimum": 0, "description": "Replay stored events after this `seq` first."},
    },
}
# The chat routes' own error body (chat.sse_consumer), not the Agent Server's `{"detail"}`.
_PROTOCOL_REFUSAL = {"4XX": {
    "description": "Refused before the protocol starts: no or an unknown API key, a thread id that can name no "
                   "thread, a body too large or not JSON.",
    "content": {"application/json": {"schema": {
        "type": "object", "required": ["error", "message"],
        "properties": {"error": {"type": "string"}, "message": {"type": "string"}}}}}}}
_THREAD_ID = {"name": "thread_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _protocol_post(operation_id: str, summary: str, description: str, body: dict, answer: str, content: dict) -> dict:
    """A POST on a thread that chat.consumers answers: a body in JSON, `answer` in `content`, or a refusal."""
    return {"post": {
        "operationId": operation_id, "tags": ["Streaming"], "summary": summary, "description": description,
        "parameters": [_THREAD_ID],
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": {"200": {"description": answer, "content": content}, **_PROTOCOL_REFUSAL},
        "security": [{"ApiKey": []}],
    }}


# Answered by chat.consumers (routed ahead of Django), not by a view of agentserver.urls: documented here unless a
# view of the same operation is.
PROTOCOL_PATHS = {
    "/threads/{thread_id}/commands": _protocol_post(
        "protocol_thread_command_post", "Send a protocol command",
        "Start a run (`run.start`), answer an interrupt (`input.respond`), cancel a run, and the protocol's other "
        "commands. Events appear on the thread's event stream.",
        _PROTOCOL_COMMAND, "The command's result or its error.",
        {"application/json": {"schema": _PROTOCOL_RESPONSE}}),
    "/threads/{thread_id}/stream/events": _protocol_post(
        "protocol_thread_events_post", "Subscribe to a thread's events",
        "Server-sent events: each frame's `data` is one protocol event `{type: \"event\", seq, method, params: "
        "{namespace, timestamp, data}}`. The stream stays open across runs.",
        _PROTOCOL_SUBSCRIPTION, "The event stream.",
        {"text/event-stream": {"schema": {"type": "string"}}}),
}


# What an operation answers besides what every view of its kind can (see `_complete`): an object its body names that
# is missing (404), one that exists already or a busy thread (409), a request the graph or the store refuses (400).
# The Agent Server's own document lists the same 404s and 409s; tests/agentserver/test_openapi_fuzz.py checks that
# every status an operation answers is listed.
_RUN_CREATION = {404, 409}
REFUSALS: dict[tuple[str, str], set[int]] = {
    ("POST", "/assistants"): {404, 409},
    ("POST", "/assistants/count"): {404},
    ("POST", "/assistants/search"): {404},
    ("DELETE", "/assistants/{assistant_id}"): {409},
    ("POST", "/threads"): {409},
    ("POST", "/threads/count"): {404},
    ("POST", "/threads/{thread_id}/copy"): {409},
    ("POST", "/threads/{thread_id}/history"): {400},
    ("GET", "/threads/{thread_id}/history"): {400},
    ("POST", "/threads/{thread_id}/state"): {400},
    ("GET", "/threads/{thread_id}/state"): {400},
    ("GET", "/threads/{thread_id}/state/{checkpoint_id}"): {400},
    ("POST", "/threads/{thread_id}/state/checkpoint"): {400},
    ("POST", "/runs"): _RUN_CREATION,
    ("POST", "/runs/batch"): _RUN_CREATION,
    ("POST", "/runs/stream"): _RUN_CREATION,
    ("POST", "/runs/wait"): _RUN_CREATION,
    ("POST", "/threads/{thread_id}/runs"): _RUN_CREATION,
    ("POST", "/threads/{thread_id}/runs/stream"): _RUN_CREATION,
    ("POST", "/threads/{thread_id}/runs/wait"): _RUN_CREATION,
    ("POST", "/runs/cancel"): {404},
    ("POST", "/runs/crons"): {404},
    ("POST", "/runs/crons/count"): {404},
    ("GET", "/store/items"): {400, 422},
    ("PUT", "/store/items"): {400},
    ("DELETE", "/store/items"): {400, 422},
    ("POST", "/store/items/search"): {400},
    ("POST", "/store/namespaces"): {400},
}


def tag_of(path: str) -> str:
    if path.endswith("/runs/crons") or "/runs/crons/" in path:
        return "Crons"
    if path.startswith("/assistants"):
        return "Assistants"
    if path.startswith("/threads/{thread_id}/runs"):
        return "Thread Runs"
    if path.startswith("/threads"):
        return "Threads"
    if path.startswith("/runs"):
        return "Stateless Runs"
    if path.startswith("/store"):
        return "Store"
    return "System"


class AgentServerSchemaGenerator(ServiceSchemaGenerator):
    """agentserver.urls only, with the Agent Server's error body `{"detail": "..."}` and its API-key header."""

    def __init__(self, **kwargs):
        super().__init__(urlconf="agentserver.urls", **kwargs)

    def get_schema(self, request=None, public=False):
        with patched_settings(SETTINGS):
            document = super().get_schema(request=None, public=True)
        secured = self._secured_operations()
        for path, item in document["paths"].items():
            for method, operation in item.items():
                self._complete(path, operation, secured=(path, method.upper()) in secured,
                               refusals=REFUSALS.get((method.upper(), path), set()))
        for path, item in copy.deepcopy(PROTOCOL_PATHS).items():
            document["paths"].setdefault(path, {}).update({m: op for m, op in item.items()
                                                           if m not in document["paths"][path]})
        components = document.setdefault("components", {})
        components.setdefault("schemas", {})["ErrorResponse"] = {
            "type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}}
        components["securitySchemes"] = {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}
        used = {tag for item in document["paths"].values() for operation in item.values() for tag in operation["tags"]}
        document["tags"] = [tag for tag in TAGS if tag["name"] in used]
        return document

    def _secured_operations(self) -> set[tuple[str, str]]:
        # drf-spectacular's endpoints are (path, regex, method, view); the DRF stubs know DRF's three-tuples.
        endpoints: list[tuple[str, str, str, Any]] = self.endpoints  # type: ignore[assignment]
        return {(path, method) for path, _regex, method, callback in endpoints
                if issubclass(getattr(callback, "cls", object), AgentServerApi)}

    @staticmethod
    def _complete(path: str, operation: dict, *, secured: bool, refusals: set[int]) -> None:
        """Tag it, and add what every view of its kind can answer (agentserver.http.handle_exception) and what
        this operation refuses besides (REFUSALS)."""
        operation["tags"] = [tag_of(path)]
        if operation.get("description") == INHERITED_DESCRIPTION:
            del operation["description"]
        operation["security"] = [{"ApiKey": []}] if secured else []
        statuses = ({401, 403} if secured else set()) | refusals
        parameters = operation.get("parameters", [])
        if any(p["in"] == "path" for p in parameters):
            statuses |= {404, 422}
        if "requestBody" in operation or secured and any(p["in"] == "query" for p in parameters):
            statuses.add(422)
        if "requestBody" in operation:
            statuses.add(413)
        responses = operation["responses"]
        for status in statuses:
            responses.setdefault(str(status), {"description": STATUS_TEXT[status]})
        for code, response in responses.items():
            if int(code) >= 400:
                response["content"] = {"application/json": {"schema": ERROR}}
        operation["responses"] = dict(sorted(responses.items()))


@functools.cache
def agent_server_document() -> dict:
    """The document without `servers` (which depends on where it is asked for); built once per process."""
    return AgentServerSchemaGenerator().get_schema()


_PREFIX = re.compile(r"^(/[A-Za-z0-9._~-]+)*$")


def document_for(*, mount: str, forwarded_prefix: str | None) -> dict:
    """The document, with the base URL its paths are relative to: where this process mounts the API (`/`, `/api/`),
    behind the prefix a proxy says it strips (deployments.proxy sends X-Forwarded-Prefix)."""
    prefix = forwarded_prefix if forwarded_prefix and _PREFIX.match(forwarded_prefix) else ""
    return {**agent_server_document(), "servers": [{"url": (prefix + mount).rstrip("/") or "/"}]}

"""What every Agent Server view shares: the caller, input parsing, and errors in the Agent Server's shapes.

Errors are `{"detail": "<message>"}` as `langgraph dev` answers them: 404 for an unknown (or someone else's)
object, 409 for a conflict, 422 for a malformed body or path id, 400 for an update the graph refuses.
"""

from __future__ import annotations

import uuid
from urllib.parse import unquote_to_bytes

from rest_framework import exceptions as drf
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from agentruntime.selectors import ChatAccessError, authorize
from agentruntime.services import dumps, thread_id_segment_problem
from agentserver import cors
from agentserver.graphs import served_graph_ids
from agentserver.selectors import system_assistant_id
from agentserver.state import InvalidStateRequest
from core.exception_handler import handle_exception as core_handle_exception
from core.exceptions import RequestValidationError
from core.rest_errors import api_error_response
from core.serializers import validated

SORT_ORDERS = ("asc", "desc")


def _messages(errors, loc: str = "") -> list[str]:
    if isinstance(errors, dict):
        return [m for key, value in errors.items()
                for m in _messages(value, loc if key == "non_field_errors" else f"{loc}.{key}".lstrip("."))]
    if isinstance(errors, list):
        return [m for index, item in enumerate(errors)
                for m in (_messages(item, f"{loc}[{index}]") if isinstance(item, dict | list)
                          else [f"{loc}: {item}" if loc else str(item)])]
    return [f"{loc}: {errors}" if loc else str(errors)]


def handle_exception(exc, context) -> Response:
    if isinstance(exc, ChatAccessError):
        return api_error_response(exc.status, exc.message)
    if isinstance(exc, drf.ParseError):
        return api_error_response(422, "Invalid JSON in request body")
    if isinstance(exc, drf.ValidationError):
        return api_error_response(422, "; ".join(_messages(exc.detail)))
    if isinstance(exc, RequestValidationError):
        return api_error_response(422, "; ".join(e["msg"] for e in exc.errors))
    if isinstance(exc, InvalidStateRequest):
        return api_error_response(400, str(exc))
    if isinstance(exc, drf.MethodNotAllowed):
        return api_error_response(405, "Method Not Allowed")
    return core_handle_exception(exc, context)


class StateRenderer(JSONRenderer):
    """JSON as the chat protocol writes it: LangChain messages (and other objects in a graph's state) as their
    wire dicts, where DRF's encoder would take a pydantic message for a list of its fields."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return b"" if data is None else dumps(data)


class FirstRenderer(BaseContentNegotiation):
    """JSON whatever the Accept header says: the SDKs ask for text/event-stream on streaming routes, and errors
    there are JSON as on the Agent Server."""

    def select_parser(self, request, parsers):
        return DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class AgentServerApi(APIView):
    """Authenticates as the chat protocol does (X-Api-Key with chat:use, a session, or anonymous where allowed)."""

    renderer_classes = [StateRenderer]
    content_negotiation_class = FirstRenderer
    # Not in the service's REST schema (/api/schema/): the Agent Server's own shapes (core.openapi_generation).
    documented_separately = True
    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    # Whether a cookie-authenticated call must come from this site (every write; searches are reads).
    writes = True

    def get_exception_handler(self):
        return handle_exception

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if cors.is_preflight(request):
            return
        if "thread_id" in kwargs and (problem := thread_id_problem(request, kwargs["thread_id"])):
            raise RequestValidationError.single(["path", "thread_id"], problem)
        headers = {name.lower(): value for name, value in request.headers.items()}
        # A CORS origin may write with an API key (or anonymously where allowed), never with the user's cookies.
        self.caller = authorize(headers=headers, client_host=request.META.get("REMOTE_ADDR", ""),
                                user=getattr(request._request, "user", None),
                                write=self.writes and request.method not in ("GET", "HEAD"),
                                cross_origin_write_ok=cors.origin_allowed(headers.get("origin")))

    def perform_authentication(self, request):
        """Nothing here: `initial` resolves the caller, reading Django's session user (AuthenticationMiddleware's
        lazy `request.user`) only when no API key is sent. DRF's own `request.user` would load it every time."""

    def options(self, request, *args, **kwargs):
        if cors.is_preflight(request):
            return Response(status=204)
        return super().options(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        cors.add_headers(request, response)
        return response

    def parse(self, serializer_class, data=None) -> dict:
        return validated(serializer_class, self.request.data if data is None else data)


def thread_id_problem(request, thread_id: str) -> str | None:
    """Why a path's thread id can name no thread (too long, `.`/`..`, an encoded `/`), or None when it can.

    The raw path is read where there is one: Django has `%2F` decoded already, so `threads/a%2Fstate` arrives as
    thread `a`'s state.
    """
    raw = (getattr(request, "scope", None) or {}).get("raw_path") or b""
    segment = unquote_to_bytes(raw.split(b"/threads/", 1)[1].split(b"/", 1)[0]).decode("utf-8", "replace") \
        if b"/threads/" in raw else thread_id
    return thread_id_segment_problem(segment)


def assistant_id_of(raw: str) -> uuid.UUID:
    """A path's assistant id: a UUID, or a served graph id standing for that graph's system assistant."""
    if raw in served_graph_ids():
        return system_assistant_id(raw)
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise RequestValidationError.single(["path", "assistant_id"], "Invalid assistant ID: must be a UUID") from None


def query_flag(request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no", ""):
        return False
    raise RequestValidationError.single(["query", name], f"Invalid {name} value")


def selected(item: dict, select: list[str] | None) -> dict:
    return {k: v for k, v in item.items() if k in select} if select else item


def search_fields(*, sorts, default_sort: str, fields) -> tuple[serializers.Field, ...]:
    """limit, offset, sort_by, sort_order and select: the page, order and projection every Agent Server search body
    takes, in the wire's order. A search's InputSerializer unpacks them in its class body, after its own filters."""
    return (
        serializers.IntegerField(min_value=1, max_value=1000, default=10),
        serializers.IntegerField(min_value=0, default=0),
        serializers.ChoiceField(sorts, default=default_sort),
        serializers.ChoiceField(SORT_ORDERS, default="desc"),
        serializers.ListField(child=serializers.ChoiceField(fields), required=False),
    )


def paginated(items: list, *, limit: int, offset: int, total: int) -> Response:
    headers = {"X-Pagination-Total": str(total)}
    if offset + limit < total:
        headers["X-Pagination-Next"] = str(offset + limit)
    return Response(items, headers=headers)

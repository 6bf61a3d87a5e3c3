"""OpenAPI generation: `core.views.method_routes` paths, and the answers every operation can give.

Views declare what is particular to them (their body, their 2xx, a 409 of their own). What follows
from the shared machinery is added here, once, so that the schema cannot drift from it:
- authentication (`accounts`): 401 without a valid key, 403 for a missing permission or workspace,
  422 for a malformed `X-Tenant-Id`; the header itself is optional (needed only when the key has
  several workspaces);
- a request body: 413 past the route's limit (`core.middleware`), 415 for a media type the view
  does not parse, 422 for a body that does not validate;
- a path parameter: 404 when nothing (visible to the caller) has that id;
- throttling: 429 with `Retry-After`;
- error bodies: `{"detail": "..."}`, and FastAPI's `{"detail": [{"loc", "msg", "type"}]}` for 422;
- what DRF's fields refuse without saying so in their schema: a NUL character in any text, a
  whitespace-only value where blanks are refused, unknown keys (serializers with
  `forbids_unknown_keys`), and an empty value of an optional query parameter, which counts as absent.

Each operation is tagged with its resource (RESOURCE_TAGS), which is how Swagger UI groups them, rather than by
the path's first segment (`api`, `v1`, `v2`).
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.urls import URLPattern, URLResolver
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

TENANT_HEADER = {
    "name": "X-Tenant-Id", "in": "header", "required": False,
    "schema": {"type": "string", "format": "uuid"},
    "description": "The workspace to act in. Needed only when the API key has several workspaces; a key with "
                   "one workspace acts in it.",
}
# DRF refuses NUL in every CharField and strips whitespace before its blank check.
TEXT_PATTERN = r"^[^\x00]*$"
NON_BLANK_TEXT_PATTERN = r"^(?!\s*$)[^\x00]*$"
_MESSAGES = {
    400: "The request cannot be carried out as asked.",
    401: "No API key, or one that is unknown, revoked or expired.",
    403: "Refused: the key lacks the permission or may not use the workspace (or must name one in X-Tenant-Id); "
         "on a signed URL, the signature does not hold.",
    404: "Nothing with this id is visible to the caller.",
    405: "The path does not offer this method.",
    409: "The request conflicts with the current state.",
    413: "The request body is larger than this route allows.",
    415: "The body's media type is not one this operation reads.",
    422: "The request does not validate; `detail` lists each problem with its location.",
    429: "Too many requests; retry after the number of seconds in Retry-After.",
}


# The resource an operation belongs to, by the start of its path: the first that matches wins.
RESOURCE_TAGS = [
    ("/v2/deployments/{deployment_id}/revisions", "Revisions"),
    ("/v1/projects/", "Revisions"),  # the build and deploy logs `langgraph deploy` reads
    ("/v2/deployments", "Deployments"),
    ("/api/v1/bulk-exports/destinations", "Bulk export destinations"),
    ("/api/v1/bulk-exports", "Bulk exports"),
    ("/api/v1/sessions", "Tracing projects"),
    ("/api/v1/runs", "Traces"),
    ("/runs", "Traces"),
    ("/api/v1/info", "Traces"),
    ("/info", "Traces"),
    ("/v2/auth", "OAuth"),
    ("/api/v1/workspaces", "Workspaces"),
    ("/api/schema/", "API reference"),
    ("/api/reference/", "API reference"),
]
TAG_DESCRIPTIONS = {
    "Deployments": "LangSmith's deployments API: a LangGraph project built and served at a stable URL.",
    "Revisions": "Each build of a deployment's source: its status, logs, redeploys.",
    "Bulk export destinations": "S3 or S3-compatible stores that bulk exports write Parquet files to.",
    "Bulk exports": "Exports of a tracing project's runs over a time range, and their export runs.",
    "Tracing projects": "Tracing projects (sessions) and their run counts.",
    "Traces": "Run ingestion in LangSmith's format: what the `langsmith` SDK sends.",
    "OAuth": "Providers, and the third-party tokens the service keeps for agents' users.",
    "Workspaces": "The workspaces an API key may act in.",
    "API reference": "This page and the OpenAPI schema it shows.",
}


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "integer"}]})
class LocItemField(serializers.Field):
    """One step of an error location: a name, or a list index."""


class ErrorDetailSerializer(serializers.Serializer):
    detail = serializers.CharField()

    class Meta:
        ref_name = "ErrorDetail"


class ValidationErrorItemSerializer(serializers.Serializer):
    loc = serializers.ListField(child=LocItemField())
    msg = serializers.CharField()
    type = serializers.CharField()

    class Meta:
        ref_name = "ValidationErrorItem"


class HTTPValidationErrorSerializer(serializers.Serializer):
    detail = ValidationErrorItemSerializer(many=True)

    class Meta:
        ref_name = "HTTPValidationError"


class ServiceAutoSchema(AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None or getattr(self.view, "documented_separately", False):
            # Another system's API: its own generator adds its security and error shapes.
            return operation
        statuses = set()
        # drf-spectacular names the schemes of views whose permissions refuse anonymous callers.
        if any(requirement for requirement in operation.get("security") or []):
            operation["security"] = [{"ApiKey": []}]
            operation.setdefault("parameters", []).append(dict(TENANT_HEADER))
            statuses |= {401, 403, 422}
        else:
            operation["security"] = []
        if "requestBody" in operation:
            statuses |= {413, 415, 422}
            # Views that read the raw body (not DRF's `request.data`) refuse an empty one.
            if getattr(self.view, "body_required", False):
                operation["requestBody"]["required"] = True
        self._optional_query_values_may_be_empty(operation.get("parameters", []))
        if any(p["in"] == "path" for p in operation.get("parameters", [])):
            statuses.add(404)
        if self.view.get_throttles():
            statuses.add(429)
        self._complete_responses(operation["responses"], statuses)
        operation["responses"] = dict(sorted(operation["responses"].items()))
        return operation

    def get_tags(self) -> list[str]:
        if getattr(self.view, "documented_separately", False):
            return super().get_tags()
        return [next((tag for prefix, tag in RESOURCE_TAGS if self.path.startswith(prefix)), "Other")]

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        plain_text = (schema.get("type") == "string" and not {"pattern", "format", "enum"} & set(schema)
                      and not any(isinstance(v, RegexValidator) for v in field.validators))
        if direction == "request" and isinstance(field, serializers.CharField) and plain_text:
            blank_refused = not field.allow_blank and field.trim_whitespace
            schema["pattern"] = NON_BLANK_TEXT_PATTERN if blank_refused else TEXT_PATTERN
        if isinstance(field, serializers.ListField) and not field.allow_empty:
            schema.setdefault("minItems", 1)
        return schema

    def _get_request_for_media_type(self, serializer, direction="request"):
        # drf-spectacular documents a PATCH body as partial, as DRF's generic views validate it. These views
        # validate the serializer as written (one that is partial makes itself so): required stays required.
        method, self.method = self.method, ("POST" if self.method == "PATCH" else self.method)
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = method

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        # drf-spectacular offers a blank string beside a constrained one with `oneOf`; when the constraint
        # also accepts "", both branches match and `oneOf` refuses it. Either branch will do.
        if "oneOf" in schema and {"type": "string", "maxLength": 0} in schema["oneOf"]:
            schema["anyOf"] = schema.pop("oneOf")

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "forbids_unknown_keys", False):
            schema["additionalProperties"] = False
        return schema

    @staticmethod
    def _optional_query_values_may_be_empty(parameters: list[dict]) -> None:
        # DRF reads `?status=` as "not given" for an optional field.
        for parameter in parameters:
            schema = parameter.get("schema", {})
            if parameter["in"] != "query" or parameter.get("required"):
                continue
            schema.pop("minLength", None)
            if schema.get("pattern") == NON_BLANK_TEXT_PATTERN:
                schema["pattern"] = rf"^$|{NON_BLANK_TEXT_PATTERN}"
            if "enum" in schema and "" not in schema["enum"]:
                schema["enum"] = [*schema["enum"], ""]

    def _error_content(self, status: int) -> dict:
        serializer = HTTPValidationErrorSerializer if status == 422 else ErrorDetailSerializer
        component = self.resolve_serializer(serializer, "response")
        return {"application/json": {"schema": component.ref}}

    def _complete_responses(self, responses: dict, statuses: set[int]) -> None:
        for status in statuses:
            responses.setdefault(str(status), {"description": _MESSAGES[status]})
        for code, response in responses.items():
            status = int(code)
            if status >= 400 and not response.get("content"):
                response["content"] = self._error_content(status)
                if response.get("description") in ("", "No response body"):
                    response["description"] = _MESSAGES.get(status, "")
            if status == 429:
                response.setdefault("headers", {})["Retry-After"] = {
                    "schema": {"type": "integer", "minimum": 1}, "required": True,
                    "description": "Seconds to wait before the next request."}


class MethodRoutesEnumerator(EndpointEnumerator):
    def _get_api_endpoints(self, patterns, prefix):
        if patterns is None:
            patterns = self.patterns
        endpoints = []
        for pattern in patterns:
            path_regex = prefix + str(pattern.pattern)
            callbacks = getattr(getattr(pattern, "callback", None), "method_callbacks", None)
            if isinstance(pattern, URLPattern) and callbacks:
                path = self.get_path_from_regex(path_regex)
                endpoints += [(path, path_regex, method, callback) for method, callback in callbacks.items()]
            elif isinstance(pattern, URLResolver):
                endpoints += self._get_api_endpoints(pattern.url_patterns, path_regex)
            else:
                endpoints += super()._get_api_endpoints([pattern], prefix)
        return endpoints


def exclude_separately_documented(endpoints: list) -> list:
    """Leave out views marked `documented_separately`: an API in another system's shapes (the Agent Server API)
    is not described by this schema's shared errors and security."""
    return [endpoint for endpoint in endpoints
            if not getattr(getattr(endpoint[3], "cls", None), "documented_separately", False)]


def resource_tags(result, generator, request, public):
    """A postprocessing hook: the used tags, described, in TAG_DESCRIPTIONS' order (Swagger UI shows them so)."""
    used = {tag for item in result["paths"].values() for operation in item.values() for tag in operation["tags"]}
    result["tags"] = [{"name": tag, "description": description} for tag, description in TAG_DESCRIPTIONS.items()
                      if tag in used]
    return result


class ServiceSchemaGenerator(SchemaGenerator):
    endpoint_inspector_cls = MethodRoutesEnumerator

"""The Agent Server API's store operations, one view per operation, on the caller's own store
(agentruntime/store/django_store.py).

Each owner (API key's workspace, user, anonymous) has a store of its own, the one its runs' graphs get; a serving
process has its own database, so a deployment's store is its own too. Items, search results and namespaces have the
shapes `langgraph dev` answers with. The store has the semantic index and TTLs the served langgraph.json's `store`
configures (agentruntime/store/config.py): a put's `index` and `ttl`, a read's `refresh_ttl` and a search's `query` act
as in the Agent Server; without an index, `query` is ignored and `score` is null.
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from langgraph.store.base import InvalidNamespaceError, Item
from rest_framework import serializers
from rest_framework.response import Response

from agentruntime.selectors import AddressTooLong, DjangoStore, store_for
from agentserver.http import AgentServerApi, query_flag
from core.exceptions import RequestValidationError
from core.rest_errors import api_error_response

SEARCH_LIMIT = 1000


def label_problem(namespace: list[str]) -> str | None:
    for label in namespace:
        if not label or "." in label:
            return f"Namespace label '{label}' must be a non-empty string without periods"
    return None


class NamespaceField(serializers.ListField):
    """A namespace: its labels, each non-empty and without a period (LangGraph joins them with periods)."""

    child = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def to_internal_value(self, data):
        namespace = super().to_internal_value(data)
        if problem := label_problem(namespace):
            raise serializers.ValidationError(problem)
        return tuple(namespace)


def labels(**kwargs) -> serializers.ListField:
    """A list of namespace labels, taken as sent (not trimmed)."""
    return serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False), **kwargs)


class ItemOutputSerializer(serializers.Serializer):
    namespace = serializers.ListField(child=serializers.CharField())
    key = serializers.CharField()
    value = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def item_out(item: Item) -> dict:
    # The datetimes as they are: the renderer writes them as the Agent Server does (ISO 8601 with +00:00).
    return {"namespace": list(item.namespace), "key": item.key, "value": item.value,
            "created_at": item.created_at, "updated_at": item.updated_at}


class StoreApi(AgentServerApi):
    """A store view: `self.store` is the caller's store."""

    @property
    def store(self) -> DjangoStore:
        return store_for(self.caller.store_scope)


class StoreItemPutApi(StoreApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "StorePutRequest"

        namespace = NamespaceField()
        key = serializers.CharField(allow_blank=True, trim_whitespace=False)
        value = serializers.DictField()
        index = serializers.JSONField(required=False, allow_null=True)
        ttl = serializers.FloatField(required=False, allow_null=True)

        def validate_index(self, index):
            if index is None or index is False or (isinstance(index, list) and all(isinstance(p, str) for p in index)):
                return index
            raise serializers.ValidationError("Must be false, null or a list of field paths.")

    @extend_schema(request=InputSerializer, responses={204: None}, operation_id="put_item",
                   summary="Store or update an item.")
    def put(self, request):
        data = self.parse(self.InputSerializer)
        try:
            ttl = {"ttl": data["ttl"]} if "ttl" in data else {}  # absent: store.ttl's default_ttl; null: none
            self.store.put(data["namespace"], data["key"], data["value"], index=data.get("index"), **ttl)
        except AddressTooLong as exc:
            raise RequestValidationError.single(["body", "key"], str(exc)) from None
        except InvalidNamespaceError as exc:  # empty, or under the reserved root label "langgraph"
            return api_error_response(400, str(exc))
        return Response(status=204)


class StoreItemGetApi(StoreApi):
    writes = False

    @extend_schema(
        parameters=[OpenApiParameter("key", str, required=True),
                    OpenApiParameter("namespace", str, description="The namespace's labels joined by periods."),
                    OpenApiParameter("refresh_ttl", bool)],
        responses={200: ItemOutputSerializer}, operation_id="get_item", summary="Retrieve a single item.")
    def get(self, request):
        key = request.query_params.get("key")
        if key is None:
            return api_error_response(400, "Key is required")
        namespace = request.query_params.get("namespace", "").split(".")
        if problem := label_problem(namespace):
            raise RequestValidationError.single(["query", "namespace"], problem)
        # Absent: store.ttl's refresh_on_read decides.
        refresh = query_flag(request, "refresh_ttl") if "refresh_ttl" in request.query_params else None
        item = self.store.get(tuple(namespace), key, refresh_ttl=refresh)
        if item is None:
            return HttpResponse(b"null", content_type="application/json")
        return Response(item_out(item))


class StoreItemDeleteApi(StoreApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "StoreDeleteRequest"

        namespace = labels(default=list)
        key = serializers.CharField(allow_blank=True, trim_whitespace=False)

    @extend_schema(request=InputSerializer, responses={204: None}, operation_id="delete_item",
                   summary="Delete an item.")
    def delete(self, request):
        data = self.parse(self.InputSerializer)
        self.store.delete(tuple(data["namespace"]), data["key"])
        return Response(status=204)


class StoreSearchApi(StoreApi):
    writes = False

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "StoreSearchRequest"

        namespace_prefix = labels(required=False, allow_null=True)
        filter = serializers.DictField(required=False, allow_null=True)
        limit = serializers.IntegerField(min_value=1, max_value=SEARCH_LIMIT, default=10)
        offset = serializers.IntegerField(min_value=0, default=0)
        query = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        refresh_ttl = serializers.BooleanField(required=False, allow_null=True)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "SearchItemsResponse"

        items = ItemOutputSerializer(many=True)

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="search_items",
                   summary="Search or list items within a namespace prefix.",
                   description="Lists items, most recently updated first. A `filter` matches the items' values key "
                               "by key: a plain value by equality, or operators `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, "
                               "`$lte`.")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        try:
            found = self.store.search(tuple(data.get("namespace_prefix") or ()), filter=data.get("filter"),
                                      limit=data["limit"], offset=data["offset"], query=data.get("query") or None,
                                      refresh_ttl=data.get("refresh_ttl"))
        except ValueError as exc:  # an unknown operator
            raise RequestValidationError.single(["body", "filter"], str(exc)) from None
        return Response({"items": [{**item_out(item), "score": item.score} for item in found]})


class StoreNamespacesApi(StoreApi):
    writes = False

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "StoreListNamespacesRequest"

        prefix = labels(required=False)
        suffix = labels(required=False)
        max_depth = serializers.IntegerField(min_value=0, required=False)
        limit = serializers.IntegerField(min_value=1, max_value=SEARCH_LIMIT, default=100)
        offset = serializers.IntegerField(min_value=0, default=0)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT, operation_id="list_namespaces",
                   summary="List namespaces with optional match conditions.")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        try:
            namespaces = self.store.list_namespaces(
                prefix=tuple(data["prefix"]) if data.get("prefix") else None,
                suffix=tuple(data["suffix"]) if data.get("suffix") else None,
                max_depth=data.get("max_depth"), limit=data["limit"], offset=data["offset"])
        except InvalidNamespaceError as exc:  # an empty label
            return api_error_response(400, str(exc))
        return Response({"namespaces": [list(namespace) for namespace in namespaces]})

"""The Agent Server API's paths, mounted at the root of a revision's serving process and under /api here.

Paths are slash-less, as the LangGraph SDKs call them.
"""

from __future__ import annotations

from django.urls import path

from agentserver import api, api_docs, api_runs, api_store, api_threads
from agentserver.cors import is_preflight
from core.views import method_routes as base_method_routes


def method_routes(**views):
    """core.views.method_routes, plus CORS preflights (OPTIONS) answered by the path's first view."""
    dispatch = base_method_routes(**views)
    preflight = next(iter(views.values())).as_view()

    def route(request, *args, **kwargs):
        if is_preflight(request):
            return preflight(request, *args, **kwargs)
        return dispatch(request, *args, **kwargs)

    route.csrf_exempt = True
    route.method_callbacks = dispatch.method_callbacks
    return route


A = "assistants/<str:assistant_id>"
T = "threads/<str:thread_id>"

urlpatterns = [
    path("ok", api.OkApi.as_view()),
    path("info", api.InfoApi.as_view()),
    path("assistants", api.AssistantCreateApi.as_view()),
    path("assistants/search", api.AssistantSearchApi.as_view()),
    path("assistants/count", api.AssistantCountApi.as_view()),
    path(A, method_routes(get=api.AssistantGetApi, patch=api.AssistantUpdateApi, delete=api.AssistantDeleteApi)),
    path(f"{A}/versions", api.AssistantVersionsApi.as_view()),
    path(f"{A}/latest", api.AssistantSetLatestApi.as_view()),
    path(f"{A}/graph", api.AssistantGraphApi.as_view()),
    path(f"{A}/schemas", api.AssistantSchemasApi.as_view()),
    path(f"{A}/subgraphs", api.AssistantSubgraphsApi.as_view()),
    path(f"{A}/subgraphs/<str:namespace>", api.AssistantSubgraphApi.as_view()),
    path("threads", api_threads.ThreadCreateApi.as_view()),
    path("threads/search", api_threads.ThreadSearchApi.as_view()),
    path("threads/count", api_threads.ThreadCountApi.as_view()),
    path(T, method_routes(get=api_threads.ThreadGetApi, patch=api_threads.ThreadUpdateApi,
                          delete=api_threads.ThreadDeleteApi)),
    path(f"{T}/copy", api_threads.ThreadCopyApi.as_view()),
    path(f"{T}/state", method_routes(get=api_threads.ThreadStateGetApi, post=api_threads.ThreadStateUpdateApi)),
    path(f"{T}/state/checkpoint", api_threads.ThreadStateAtCheckpointApi.as_view()),
    path(f"{T}/state/<str:checkpoint_id>", api_threads.ThreadStateAtCheckpointIdApi.as_view()),
    path(f"{T}/history", method_routes(get=api_threads.ThreadHistoryGetApi, post=api_threads.ThreadHistoryPostApi)),
    path(f"{T}/runs", method_routes(get=api_runs.ThreadRunListApi, post=api_runs.ThreadRunCreateApi)),
    path(f"{T}/runs/stream", api_runs.ThreadRunStreamApi.as_view()),
    path(f"{T}/runs/wait", api_runs.ThreadRunWaitApi.as_view()),
    path(f"{T}/runs/<str:run_id>", method_routes(get=api_runs.RunGetApi, delete=api_runs.RunDeleteApi)),
    path(f"{T}/runs/<str:run_id>/join", api_runs.RunJoinApi.as_view()),
    path(f"{T}/runs/<str:run_id>/stream", api_runs.RunJoinStreamApi.as_view()),
    path(f"{T}/runs/<str:run_id>/cancel", api_runs.RunCancelApi.as_view()),
    path(f"{T}/stream", api_runs.ThreadStreamApi.as_view()),
    path("runs", api_runs.StatelessRunCreateApi.as_view()),
    path("runs/stream", api_runs.StatelessRunStreamApi.as_view()),
    path("runs/wait", api_runs.StatelessRunWaitApi.as_view()),
    path("runs/batch", api_runs.RunBatchApi.as_view()),
    path("runs/cancel", api_runs.RunsCancelManyApi.as_view()),
    path("store/items", method_routes(put=api_store.StoreItemPutApi, get=api_store.StoreItemGetApi,
                                      delete=api_store.StoreItemDeleteApi)),
    path("store/items/search", api_store.StoreSearchApi.as_view()),
    path("store/namespaces", api_store.StoreNamespacesApi.as_view()),
    path("openapi.json", api_docs.OpenApiDocumentApi.as_view()),
    path("docs", api_docs.DocsApi.as_view()),
]

"""The Agent Server API's paths, mounted at the root of a revision's serving process and under /api here.

Paths are slash-less, as the LangGraph SDKs call them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import path
from rest_framework.views import APIView

from agentserver import api, api_crons, api_docs, api_runs, api_store, api_threads
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

# Each path and what serves it: an APIView, or method_routes() where a path has one view per method.
ROUTES: dict[str, type[APIView] | Callable[..., Any]] = {
    "ok": api.OkApi,
    "info": api.InfoApi,
    "assistants": api.AssistantCreateApi,
    "assistants/search": api.AssistantSearchApi,
    "assistants/count": api.AssistantCountApi,
    A: method_routes(get=api.AssistantGetApi, patch=api.AssistantUpdateApi, delete=api.AssistantDeleteApi),
    f"{A}/versions": api.AssistantVersionsApi,
    f"{A}/latest": api.AssistantSetLatestApi,
    f"{A}/graph": api.AssistantGraphApi,
    f"{A}/schemas": api.AssistantSchemasApi,
    f"{A}/subgraphs": api.AssistantSubgraphsApi,
    f"{A}/subgraphs/<str:namespace>": api.AssistantSubgraphApi,
    "threads": api_threads.ThreadCreateApi,
    "threads/search": api_threads.ThreadSearchApi,
    "threads/count": api_threads.ThreadCountApi,
    T: method_routes(get=api_threads.ThreadGetApi, patch=api_threads.ThreadUpdateApi,
                     delete=api_threads.ThreadDeleteApi),
    f"{T}/copy": api_threads.ThreadCopyApi,
    f"{T}/state": method_routes(get=api_threads.ThreadStateGetApi, post=api_threads.ThreadStateUpdateApi),
    f"{T}/state/checkpoint": api_threads.ThreadStateAtCheckpointApi,
    f"{T}/state/<str:checkpoint_id>": api_threads.ThreadStateAtCheckpointIdApi,
    f"{T}/history": method_routes(get=api_threads.ThreadHistoryGetApi, post=api_threads.ThreadHistoryPostApi),
    f"{T}/runs": method_routes(get=api_runs.ThreadRunListApi, post=api_runs.ThreadRunCreateApi),
    f"{T}/runs/stream": api_runs.ThreadRunStreamApi,
    f"{T}/runs/crons": api_crons.ThreadCronCreateApi,
    f"{T}/runs/wait": api_runs.ThreadRunWaitApi,
    f"{T}/runs/<str:run_id>": method_routes(get=api_runs.RunGetApi, delete=api_runs.RunDeleteApi),
    f"{T}/runs/<str:run_id>/join": api_runs.RunJoinApi,
    f"{T}/runs/<str:run_id>/stream": api_runs.RunJoinStreamApi,
    f"{T}/runs/<str:run_id>/cancel": api_runs.RunCancelApi,
    f"{T}/stream": api_runs.ThreadStreamApi,
    "runs": api_runs.StatelessRunCreateApi,
    "runs/stream": api_runs.StatelessRunStreamApi,
    "runs/wait": api_runs.StatelessRunWaitApi,
    "runs/batch": api_runs.RunBatchApi,
    "runs/cancel": api_runs.RunsCancelManyApi,
    "runs/crons": api_crons.CronCreateApi,
    "runs/crons/search": api_crons.CronSearchApi,
    "runs/crons/count": api_crons.CronCountApi,
    "runs/crons/<str:cron_id>": method_routes(get=api_crons.CronGetApi, patch=api_crons.CronUpdateApi,
                                              delete=api_crons.CronDeleteApi),
    "store/items": method_routes(put=api_store.StoreItemPutApi, get=api_store.StoreItemGetApi,
                                 delete=api_store.StoreItemDeleteApi),
    "store/items/search": api_store.StoreSearchApi,
    "store/namespaces": api_store.StoreNamespacesApi,
    "openapi.json": api_docs.OpenApiDocumentApi,
    "docs": api_docs.DocsApi,
}


def _callback(view):
    """A route's view function: an APIView's as_view(), or what method_routes() made, as it is."""
    return view.as_view() if isinstance(view, type) else view


urlpatterns = [path(route, _callback(view)) for route, view in ROUTES.items()]

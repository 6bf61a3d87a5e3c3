"""The Agent Server API's run operations (its runs are chat runs), one view per operation: on a thread, and
stateless (a new thread each).

Background runs answer the run; `…/stream` answers the run's SSE frames and `…/wait` its result once it ended,
both streamed by agentserver/streams.py. `Content-Location` names the run as the SDKs expect
(`/threads/{thread_id}/runs/{run_id}`, under the API's mount point).
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response

from agentruntime.models import ChatRun
from agentruntime.selectors import cursor_from_last_event_id
from agentruntime.services import db_run, dumps, policy, run_stop
from agentserver import after_run, selectors, services, streams
from agentserver.http import AgentServerApi, query_flag
from agentserver.serializers import RunCreateSerializer, RunOutputSerializer
from core.exceptions import RequestValidationError


def _prefix(request, marker: str) -> str:
    """Where the API is mounted (`""` at a revision's root, `/api` here): the part of the path before `marker`."""
    path = request.path
    return path[:path.rfind(marker)] if marker in path else ""


def _locations(request, marker: str, run, stateless: bool = False) -> dict[str, str]:
    """A stateless run is named `/runs/{run_id}` when it is created or streamed (its thread is temporary), as on
    the Agent Server; waited for, it is named under its thread."""
    thread = "" if stateless else f"/threads/{run.thread_id}"
    return {"Content-Location": f"{_prefix(request, marker)}{thread}/runs/{run.pk}"}


def _abandon(run, on_disconnect: str | None):
    if on_disconnect != "cancel":
        return None

    async def cancel() -> None:
        # A run nobody claimed yet (a delayed one, or one queued behind another) ends at once; a running one is
        # asked to stop, here at once if it runs here.
        if not await db_run(services.run_cancel, run=run, rollback=False):
            await run_stop(run=run, wait=False)

    return cancel


def _after_stream(run):
    """What a streaming or waiting request does once its run ended: remove a stateless run's temporary thread
    (whatever is left of it: run_finish_temporary needs only the run's id, thread and kwargs, which do not change)."""
    if not (run.kwargs or {}).get("temporary"):
        return None
    return lambda: db_run(after_run.run_finish_temporary, run=run)


async def _result_of(run_id) -> dict:
    """The ended chat run's result, read again (the run object a view holds is from before it ended)."""
    return await db_run(selectors.run_result_by_id, run_id=run_id)


def _result_stream(run, on_disconnect: str | None):
    async def result() -> dict:
        if (run.kwargs or {}).get("temporary"):
            # The result, then the temporary thread removed, in one trip to the database thread: the thread is
            # gone when the answer arrives.
            return await db_run(after_run.run_result_then_finish_temporary, run=run)
        return await _result_of(run.pk)

    return streams.result_after_end(run.thread_id, str(run.pk), since=run.start_seq, result=result,
                                    on_abandon=_abandon(run, on_disconnect),
                                    watch_status=not policy(run.kind).stores_frames)


class _RunCreateBase(AgentServerApi):
    # What creating a chat run shares: one body and one service. (No docstring: it would describe every operation.)
    InputSerializer = RunCreateSerializer
    OutputSerializer = RunOutputSerializer
    marker = "/threads/"

    def create(self, request, thread_id: str | None):
        data = self.parse(self.InputSerializer)
        run, _cancelling = services.run_create(caller=self.caller, thread_id=thread_id, data=data)
        return run, data


class ThreadRunCreateApi(_RunCreateBase):
    @extend_schema(request=RunCreateSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="create_run_threads__thread_id__runs_post")
    def post(self, request, thread_id: str | None = None):
        run, _ = self.create(request, thread_id)
        return Response(self.OutputSerializer(run).data,
                        headers=_locations(request, self.marker, run, thread_id is None))


class ThreadRunListApi(AgentServerApi):
    writes = False
    OutputSerializer = RunOutputSerializer

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="list_runs_http_threads__thread_id__runs_get")
    def get(self, request, thread_id: str):
        limit = _query_int(request, "limit", 10, 1, 1000)
        offset = _query_int(request, "offset", 0, 0, 10 ** 9)
        status = request.query_params.get("status")
        if status is not None and status not in selectors.RUN_STATUS_FILTERS:
            raise RequestValidationError.single(["query", "status"], f"Invalid status: {status}")
        found = selectors.run_list(caller=self.caller, thread_id=thread_id, limit=limit, offset=offset, status=status)
        return Response(self.OutputSerializer(found, many=True).data)


class ThreadRunStreamApi(_RunCreateBase):
    @extend_schema(request=RunCreateSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="stream_run_threads__thread_id__runs_stream_post")
    def post(self, request, thread_id: str | None = None):
        run, data = self.create(request, thread_id)
        headers = _locations(request, self.marker, run, thread_id is None)
        headers["Location"] = headers["Content-Location"] + "/stream"
        return streams.sse_response(_then(streams.frames(run.thread_id, str(run.pk), since=run.start_seq,
                                                         on_abandon=_abandon(run, data.get("on_disconnect"))),
                                          _after_stream(run)), headers)


async def _then(stream, after):
    async for chunk in stream:
        yield chunk
    if after is not None:
        await after()


class ThreadRunWaitApi(_RunCreateBase):
    @extend_schema(request=RunCreateSerializer, responses=OpenApiTypes.OBJECT,
                   operation_id="wait_run_threads__thread_id__runs_wait_post")
    def post(self, request, thread_id: str | None = None):
        run, data = self.create(request, thread_id)
        headers = _locations(request, self.marker, run)
        headers["Location"] = headers["Content-Location"] + "/join"
        return streams.json_stream_response(_result_stream(run, data.get("on_disconnect")), headers)


@extend_schema_view(post=extend_schema(operation_id="run_stateless_runs_post"))
class StatelessRunCreateApi(ThreadRunCreateApi):
    marker = "/runs"


@extend_schema_view(post=extend_schema(operation_id="stream_run_stateless_runs_stream_post"))
class StatelessRunStreamApi(ThreadRunStreamApi):
    marker = "/runs"


@extend_schema_view(post=extend_schema(operation_id="wait_run_stateless_runs_wait_post"))
class StatelessRunWaitApi(ThreadRunWaitApi):
    marker = "/runs"


class RunBatchApi(AgentServerApi):
    InputSerializer = RunCreateSerializer
    OutputSerializer = RunOutputSerializer

    @extend_schema(request=RunCreateSerializer(many=True), responses=OpenApiTypes.OBJECT,
                   operation_id="run_batch_stateless_runs_post")
    def post(self, request):
        if not isinstance(request.data, list):
            raise RequestValidationError.single(["body"], "The body must be a list of runs")
        serializer = self.InputSerializer(data=request.data, many=True)
        serializer.is_valid(raise_exception=True)
        created = [services.run_create(caller=self.caller, thread_id=None, data=item)[0]
                   for item in serializer.validated_data]
        return Response(self.OutputSerializer(created, many=True).data)


class RunGetApi(AgentServerApi):
    OutputSerializer = RunOutputSerializer

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="get_run_http_threads__thread_id__runs__run_id__get")
    def get(self, request, thread_id: str, run_id: str):
        run = selectors.run_get(caller=self.caller, thread_id=thread_id, run_id=run_id)
        return Response(self.OutputSerializer(run).data)


class RunDeleteApi(AgentServerApi):
    @extend_schema(responses={204: None}, operation_id="delete_run_threads__thread_id__runs__run_id__delete")
    def delete(self, request, thread_id: str, run_id: str):
        services.run_delete(run=selectors.run_get(caller=self.caller, thread_id=thread_id, run_id=run_id))
        return Response(status=204)


class RunJoinApi(AgentServerApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   operation_id="join_run_http_threads__thread_id__runs__run_id__join_get")
    def get(self, request, thread_id: str, run_id: str):
        run = selectors.run_get(caller=self.caller, thread_id=thread_id, run_id=run_id)
        headers = _locations(request, "/threads/", run)
        headers["Location"] = headers["Content-Location"] + "/join"
        if run.status not in selectors.ACTIVE_RUN_STATUSES:
            return Response(selectors.run_result(run=run), headers=headers)
        return streams.json_stream_response(_result_stream(run, None), headers)


class RunJoinStreamApi(AgentServerApi):
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   operation_id="stream_run_http_threads__thread_id__runs__run_id__join_get")
    def get(self, request, thread_id: str, run_id: str):
        run = selectors.run_get(caller=self.caller, thread_id=thread_id, run_id=run_id)
        last_event_id = request.headers.get("Last-Event-ID")
        try:
            # "-1" is what the JS SDK's useStream sends to rejoin a run from its start (reconnectOnMount).
            since = run.start_seq if (last_event_id or "").strip() == "-1" else cursor_from_last_event_id(last_event_id)
        except ValueError as exc:
            raise RequestValidationError.single(["header", "Last-Event-ID"], str(exc)) from None
        if since is None:
            # A resumable run replays from its start; otherwise only what it sends from now on (as the Agent Server).
            since = run.start_seq if (run.kwargs or {}).get("resumable") or run.status == "pending" else None
        cancel = query_flag(request, "cancel_on_disconnect")
        headers = _locations(request, "/threads/", run)
        headers["Location"] = headers["Content-Location"] + "/stream"
        return streams.sse_response(_joined(run, since, cancel), headers)


async def _joined(run, since: int | None, cancel: bool):
    if since is None:
        since = await streams.last_seq_of(run.thread_id)
    async for chunk in streams.frames(run.thread_id, str(run.pk), since=since,
                                      watch_status=not policy(run.kind).stores_frames,
                                      on_abandon=_abandon(run, "cancel" if cancel else None)):
        yield chunk


class ThreadStreamApi(AgentServerApi):
    writes = False

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="join_thread_stream_threads__thread_id__stream_get")
    def get(self, request, thread_id: str):
        thread = selectors.thread_get(caller=self.caller, thread_id=thread_id)
        try:
            since = cursor_from_last_event_id(request.headers.get("Last-Event-ID"))
        except ValueError as exc:
            raise RequestValidationError.single(["header", "Last-Event-ID"], str(exc)) from None
        return streams.sse_response(_thread_frames(thread.id, since), {})


async def _thread_frames(thread_id: str, since: int | None):
    if since is None:
        since = await streams.last_seq_of(thread_id)
    async for chunk in streams.frames(thread_id, None, since=since):
        yield chunk


class RunCancelApi(AgentServerApi):
    @extend_schema(responses={202: None}, operation_id="cancel_run_http_threads__thread_id__runs__run_id__cancel_post")
    def post(self, request, thread_id: str, run_id: str):
        run = selectors.run_get(caller=self.caller, thread_id=thread_id, run_id=run_id)
        wait = query_flag(request, "wait")
        if policy(run.kind).stopped_in_process and run.status != ChatRun.Status.PENDING:
            # A chat run of the protocol's run.start (the examples' stop button): stopped here at once if it runs
            # here, answered as the examples' clients read it.
            status = async_to_sync(run_stop)(run=run, wait=wait)
            return Response({"run_id": str(run.pk), "status": status}, status=200 if wait else 202)
        rollback = request.query_params.get("action", "interrupt") == "rollback"
        ended = services.run_cancel(run=run, rollback=rollback)
        if ended and rollback:
            return Response(status=204 if wait else 202)
        if not wait:
            return Response(status=202)
        return streams.json_stream_response(_cancelled_result(run, rollback), {})


async def _cancelled_result(run, rollback: bool):
    await run_stop(run=run, wait=True)
    if rollback:
        yield b"{}"
        return
    yield dumps(await _result_of(run.pk))


class RunsCancelManyApi(AgentServerApi):
    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RunsCancelInput"

        thread_id = serializers.CharField(required=False)
        run_ids = serializers.ListField(child=serializers.UUIDField(), required=False)
        status = serializers.ChoiceField(["pending", "running", "all"], required=False)

    @extend_schema(request=InputSerializer, responses={204: None}, operation_id="cancel_runs_post")
    def post(self, request):
        data = self.parse(self.InputSerializer)
        rollback = request.query_params.get("action") == "rollback"
        services.runs_cancel_many(caller=self.caller, thread_id=data.get("thread_id"),
                                  run_ids=[str(r) for r in data.get("run_ids") or []] or None,
                                  status=data.get("status"), rollback=rollback)
        return Response(status=204)


def _query_int(request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RequestValidationError.single(["query", name], f"Invalid {name}: must be a whole number") from None
    if not low <= value <= high:
        raise RequestValidationError.single(["query", name], f"{name} must be between {low} and {high}")
    return value

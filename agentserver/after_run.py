"""What happens after an Agent Server chat run ended (after-run hooks of its kind, agentruntime/runs/kinds.py,
registered in apps.py): the run's webhook is called, and a stateless run's temporary thread is removed (by the request
waiting for the run, or else by the hook a few seconds later)."""

from __future__ import annotations

import asyncio
import logging
import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agentruntime import services as chat_services
from agentruntime.models import ChatRun, ChatThread
from agentruntime.selectors import run_state
from agentruntime.services import db_run, dumps, get_checkpointer
from agentserver import selectors
from agentserver.serializers import RunOutputSerializer
from core import egress
from core.protocol_errors import error_body

log = logging.getLogger("agentserver.after_run")
# A waiting request reads a stateless run's result right after it ends, then removes its thread itself; a run nobody
# waits for keeps its thread this long.
TEMPORARY_GRACE_SECONDS = 5.0
WEBHOOK_TIMEOUT = (5.0, 10.0)


def webhook_payload(*, run_id) -> dict | None:
    """The run as the Agent Server posts it to a webhook: the run, its times, the thread's values and any error."""
    run = ChatRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    thread = ChatThread.objects.filter(pk=run.thread_id).first()
    values = selectors.thread_view(thread)["values"] if thread is not None else None
    payload = {**RunOutputSerializer(run).data, "run_started_at": run.created_at.isoformat(),
               "run_ended_at": run.finished_at.isoformat() if run.finished_at else None,
               "webhook_sent_at": timezone.now().isoformat(), "values": values}
    if run.status == ChatRun.Status.FAILED:
        payload["error"] = error_body("RunError", run.error)
    return payload


def webhook_send(*, url: str, payload: dict) -> int:
    """POST the payload through the egress guard (the address is checked again, pinned, redirects not followed)."""
    response = egress.egress_http_request("POST", url, headers={"Content-Type": "application/json"},
                                          data=dumps(payload), timeout=WEBHOOK_TIMEOUT)
    return response.status_code


async def call_webhook(request, status: str) -> None:
    url = (request.kwargs or {}).get("webhook")
    # langgraph.json's http.disable_webhooks: the run still executes, its webhook is not called.
    if not url or settings.LANGGRAPH_HTTP.get("disable_webhooks"):
        return
    payload = await db_run(webhook_payload, run_id=request.run_id)
    if payload is None:
        return
    try:
        code = await asyncio.to_thread(webhook_send, url=url, payload=payload)
    except egress.EgressDenied as exc:
        log.warning("webhook of run %s refused: %s", request.run_id, exc.detail)
        return
    except Exception as exc:
        log.warning("webhook of run %s failed: %s: %s", request.run_id, type(exc).__name__, exc)
        return
    log.info("webhook of run %s called (%s)", request.run_id, code)


async def remove_temporary_thread(request, status: str) -> None:
    if not (request.kwargs or {}).get("temporary"):
        return
    await asyncio.sleep(TEMPORARY_GRACE_SECONDS)
    await db_run(run_finish_temporary_if_left, run_id=request.run_id, thread_id=request.thread_id)


# --- A stateless run's temporary thread (`on_completion: delete`) ---------------------------------------------
def run_finish_temporary(*, run: ChatRun) -> None:
    """After a stateless run with `on_completion: delete` ended: delete its thread."""
    if (run.kwargs or {}).get("temporary"):
        _temporary_thread_delete(thread_id=run.thread_id)


def run_result_then_finish_temporary(*, run: ChatRun) -> dict:
    """What a request waiting for a stateless run does once it ended: read its result (selectors.run_result_by_id),
    then remove its temporary thread; a failure to remove it leaves it to the after-run hook."""
    result = selectors.run_result_by_id(run_id=run.pk)
    try:
        run_finish_temporary(run=run)
    except Exception:
        log.warning("the temporary thread of run %s was not removed; the after-run hook retries", run.pk,
                    exc_info=True)
    return result


def run_finish_temporary_if_left(*, run_id: uuid.UUID, thread_id: str) -> None:
    """`run_finish_temporary` for a stateless run whose thread no waiting request removed: only one read when one
    did."""
    if run_state(run_id=run_id) is not None:
        _temporary_thread_delete(thread_id=thread_id)


def _temporary_thread_delete(*, thread_id: str) -> None:
    # One write transaction, not one per table: on SQLite every transaction queues for the single write lock.
    with transaction.atomic():
        get_checkpointer().delete_thread(thread_id)
        chat_services.thread_delete_by_id(thread_id=thread_id)

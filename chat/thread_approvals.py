"""A thread's approvals for the chat page: the ones it waits on and the ones already answered, with the answers.

What waits comes from the checkpoint (agentruntime/interrupts.py); what was asked, where, and which answer was given
come from the durable event log and the `chat_chatinterrupt` rows, so a reload shows the same cards, decided ones too.
"""

from __future__ import annotations

from typing import Any

from agentruntime import selectors
from agentruntime.selectors import ServedGraph, pending_interrupts
from agentruntime.services import db_run


async def thread_approvals(served: ServedGraph, thread_id: str) -> list[dict[str, Any]]:
    """Each interrupt the thread asked, oldest first: `{interrupt_id, namespace, task_call_id, request, status,
    response}`. `status` is `pending` or `answered`; an interrupt neither waiting nor answered (its run was
    cancelled, or a message was sent instead) is left out. `task_call_id` is the coordinator's `task` call whose
    subagent asked (null for the coordinator's own calls)."""
    pending = await pending_interrupts(served, thread_id)
    asked = await db_run(selectors.interrupt_requests, thread_id=thread_id)
    answers = await db_run(selectors.interrupt_answers, thread_id=thread_id)
    seen = {interrupt_id for interrupt_id, _, _ in asked}
    # Asked by a run whose events are gone (retention) or never stored: the checkpoint still says what it asks.
    asked += [(i.id, i.namespace, i.value) for i in pending.values() if i.id not in seen]
    segments = {namespace[0] for _, namespace, _ in asked if namespace}
    tasks = await db_run(selectors.task_call_ids, thread_id=thread_id, segments=segments)
    approvals = []
    for interrupt_id, namespace, request in asked:
        if interrupt_id in pending:
            status, response = "pending", None
        elif interrupt_id in answers:
            status, response = "answered", answers[interrupt_id]
        else:
            continue
        approvals.append({"interrupt_id": interrupt_id, "namespace": namespace,
                          "task_call_id": tasks.get(namespace[0]) if namespace else None,
                          "request": request, "status": status, "response": response})
    return approvals

"""`input.respond`: answer one interrupt or several at once, resuming the run on the same thread.

Single `{namespace, interrupt_id, response}` or batch `{responses: [{namespace, interrupt_id, response}, ...]}`, with
optional `update` and `goto` for the resuming Command. The answers resume the thread as one new run, with
`Command(resume={interrupt_id: response, ...})`; each interrupt is claimed in the transaction that registers that
run, so it is answered once however many clients answer it.
"""

from __future__ import annotations

from typing import Any

from agentruntime import selectors
from agentruntime.selectors import (
    Caller,
    InvalidResponse,
    PendingInterrupt,
    check_response,
    get_served_graph,
    pending_interrupts,
)
from agentruntime.services import CommandError, db_run, start_run
from core.exceptions import NotFound


async def input_respond(params: dict, *, caller: Caller, thread_id: str) -> dict:
    answers = _answers(params)
    try:
        thread = await db_run(selectors.thread_get_for_caller, thread_id=thread_id, caller=caller)
    except NotFound:
        # Not the caller's thread (or none at all): the command names no thread it may answer in.
        raise CommandError("invalid_argument", f"Thread {thread_id} is not one of yours: interrupts are answered "
                                               f"in the caller's own threads.") from None
    served = get_served_graph(thread.graph_name)
    pending = await pending_interrupts(served, thread.id)
    for interrupt_id, (namespace, response) in answers.items():
        _check(pending.get(interrupt_id), interrupt_id, namespace, response)
    command: dict[str, Any] = {"resume": {interrupt_id: response for interrupt_id, (_, response) in answers.items()},
                               **_update_and_goto(params, set(served.graph.nodes), set(served.graph.channels))}
    await start_run(thread, None, checkpoint_id=None, metadata=_metadata(params), command=command,
                    answering={interrupt_id: pending[interrupt_id].namespace for interrupt_id in answers})
    return {}


def _answers(params: dict) -> dict[str, tuple[list[str] | None, Any]]:
    """interrupt_id → (namespace or None, response), from the single or the batch form."""
    if "responses" in params:
        items = params["responses"]
        if not isinstance(items, list) or not items or not all(isinstance(item, dict) for item in items):
            raise CommandError("invalid_argument", "responses must be a non-empty list of {namespace, interrupt_id, "
                                                   "response}.")
    else:
        items = [params]
    answers: dict[str, tuple[list[str] | None, Any]] = {}
    for item in items:
        interrupt_id = item.get("interrupt_id")
        if not isinstance(interrupt_id, str) or not interrupt_id:
            raise CommandError("invalid_argument", "interrupt_id is required: the id of the input.requested event "
                                                   "being answered.")
        if "response" not in item:
            raise CommandError("invalid_argument", f"response is required (interrupt {interrupt_id}).")
        if interrupt_id in answers:
            raise CommandError("invalid_argument", f"Interrupt {interrupt_id} is answered twice in one command.")
        namespace = item.get("namespace")
        if namespace is not None and (not isinstance(namespace, list)
                                      or not all(isinstance(s, str) for s in namespace)):
            raise CommandError("invalid_argument", "namespace must be a list of strings.")
        answers[interrupt_id] = (namespace, item["response"])
    return answers


def _check(interrupt: PendingInterrupt | None, interrupt_id: str, namespace: list[str] | None, response: Any) -> None:
    if interrupt is None:
        raise CommandError("no_such_interrupt", f"The thread is not waiting on interrupt {interrupt_id}: it is "
                                                f"unknown or already answered.")
    if namespace is not None and tuple(namespace) not in interrupt.namespaces:
        raise CommandError("invalid_argument", f"Interrupt {interrupt_id} was raised at namespace "
                                               f"{interrupt.namespace}, not {namespace}.")
    try:
        check_response(interrupt, response)
    except InvalidResponse as exc:
        raise CommandError("invalid_argument", str(exc)) from None


def _update_and_goto(params: dict, nodes: set[str], channels: set[str]) -> dict[str, Any]:
    """The resuming Command's `update` and `goto`, refused here when malformed: a resume that fails to start would
    leave its interrupts answered and the thread waiting."""
    extra: dict[str, Any] = {}
    update, goto = params.get("update"), params.get("goto")
    if update is not None:
        if not isinstance(update, dict) or not set(update) <= channels:
            raise CommandError("invalid_argument", f"update must be a JSON object of state values (of "
                                                   f"{sorted(c for c in channels if not c.startswith('_'))}).")
        extra["update"] = update
    if goto is not None:
        targets = [goto] if isinstance(goto, str) else goto
        if not isinstance(targets, list) or not all(isinstance(t, str) and t in nodes for t in targets):
            raise CommandError("invalid_argument", f"goto must name nodes of the graph: {sorted(nodes)}.")
        extra["goto"] = targets
    return extra


def _metadata(params: dict) -> dict:
    metadata = params.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise CommandError("invalid_argument", "metadata must be a JSON object.")
    return metadata

"""The agent runtime's face for reads: the other apps read threads, runs, events, interrupts, graphs and the store
through this module (and `agentruntime.services` for writes), never below it. Nothing inside the runtime imports
it.

- Threads, runs, events and interrupts as stored (agentruntime/reads.py, agentruntime/events/statements.py).
- Who is calling and which threads are theirs (agentruntime/access.py).
- Following a thread's events as they are stored: the per-process hub and what a subscriber asks for
  (agentruntime/events/).
- The graphs a process serves (agentruntime/served_graphs.py), a thread's pending interrupts
  (agentruntime/interrupts.py), an owner's LangGraph store (agentruntime/store/), the thread TTL in force.
"""

from typing import TYPE_CHECKING

from core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from agentruntime.access import Caller, ChatAccessError, authorize
    from agentruntime.events.hub import BATCH_BYTES, Subscriber, hubs, wait_event
    from agentruntime.events.statements import run_frame_payloads, run_state
    from agentruntime.events.subscriptions import (
        END_OF_RUN,
        FramesSubscription,
        InvalidSubscription,
        Subscription,
        cursor_from_last_event_id,
        parse_subscription,
    )
    from agentruntime.interrupts import (
        InvalidResponse,
        PendingInterrupt,
        check_response,
        checkpoint_interrupts,
        pending_interrupts,
    )
    from agentruntime.reads import (
        PAGE,
        events_after,
        interrupt_answers,
        interrupt_namespaces,
        interrupt_requests,
        replay_start,
        run_active,
        run_cancel_state,
        run_get,
        run_latest,
        run_lifecycle_events,
        run_list_stale,
        run_thread_id,
        task_call_ids,
        thread_cursor_state,
        thread_expired,
        thread_get_for_caller,
        thread_last_seqs,
        thread_list_for_caller,
    )
    from agentruntime.served_graphs import (
        MODULE_PREFIX,
        ConfigurationError,
        GraphLoadError,
        ServedGraph,
        get_served_graph,
        served_spec,
        served_specs,
    )
    from agentruntime.store.config import store_for
    from agentruntime.store.django_store import AddressTooLong, DjangoStore, namespace_text
    from agentruntime.thread_ttl import current as thread_ttl_current
    from agentruntime.thread_ttl import default_ttl as thread_ttl_default
    from agentruntime.thread_ttl import expiry as thread_ttl_expiry

__getattr__ = lazy_exports(__name__)
__all__ = [
    "BATCH_BYTES", "END_OF_RUN", "MODULE_PREFIX", "PAGE", "AddressTooLong", "Caller", "ChatAccessError",
    "ConfigurationError", "DjangoStore", "FramesSubscription", "GraphLoadError", "InvalidResponse",
    "InvalidSubscription", "PendingInterrupt", "ServedGraph", "Subscriber", "Subscription", "authorize",
    "check_response", "checkpoint_interrupts", "cursor_from_last_event_id", "events_after", "get_served_graph",
    "hubs", "interrupt_answers", "interrupt_namespaces", "interrupt_requests", "namespace_text", "parse_subscription",
    "pending_interrupts", "replay_start", "run_active", "run_cancel_state", "run_frame_payloads", "run_get",
    "run_latest", "run_lifecycle_events", "run_list_stale", "run_state", "run_thread_id", "served_spec",
    "served_specs", "store_for", "task_call_ids", "thread_cursor_state", "thread_expired", "thread_get_for_caller",
    "thread_last_seqs", "thread_list_for_caller", "thread_ttl_current", "thread_ttl_default", "thread_ttl_expiry",
    "wait_event",
]

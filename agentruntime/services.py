"""The agent runtime's face for what changes things: the other apps (chat, agentserver, deployments, config) use
the runtime through this module, `agentruntime.selectors` and its models, never below them (an import-linter
contract, `runtime-face`, says so). Nothing inside the runtime imports this module: its parts import each other, so
the face adds no import cycle.

- Threads and runs as rows (agentruntime/writes/): create, claim, copy, lock, finish, sweep; the event log.
- Runs as executions (agentruntime/runs/): start one, stop one, the queue's executors, the kinds of run an app
  registers, a run's `command`.
- The event records a run stores (agentruntime/events/records.py and frames.py).
- Configuring what a process serves: its graphs, their thread TTLs, their store.
- `db_run`: the runtime's database thread pool, for async callers of the synchronous ORM code.
"""

from typing import TYPE_CHECKING

from core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from agentruntime.db_executor import run as db_run
    from agentruntime.events.frames import Frame, end_frame, frame_channel
    from agentruntime.events.records import WireEvent, dumps, lifecycle_event, make_event, to_jsonable, updates_events
    from agentruntime.runs.commands import command_from
    from agentruntime.runs.control import run_stop
    from agentruntime.runs.execution import fail_runs_of_predecessor
    from agentruntime.runs.kinds import Events, RunKindPolicy, after_run, policy, register
    from agentruntime.runs.queue import ExecutorStarter, notify_executors
    from agentruntime.runs.start import CommandError, start_run
    from agentruntime.served_graphs import configure_graphs, get_checkpointer, import_object, load_graph
    from agentruntime.store.config import configure as store_configure
    from agentruntime.store.config_shape import StoreConfigError
    from agentruntime.store.config_shape import check as store_config_check
    from agentruntime.thread_ttl import configure as thread_ttl_configure
    from agentruntime.writes.event_log import RunEnded, events_append, events_enforce_retention
    from agentruntime.writes.run_records import (
        CANCEL_ACK_SECONDS,
        DEAD_RUN_ERROR,
        RESTARTED_ERROR,
        ROLLBACK_KEY,
        InterruptAnswered,
        RunActive,
        run_cancel_queued,
        run_cancel_request,
        run_create,
        run_create_answering,
        run_end_if_orphaned,
        run_fail_dead,
        run_finish,
        run_heartbeat,
        run_made_progress,
        run_orphan_reason,
        run_register,
        run_roll_back,
        runs_fail_after_restart,
        runs_sweep_dead,
    )
    from agentruntime.writes.thread_records import (
        MAX_THREAD_ID_LENGTH,
        TITLE_LENGTH,
        TITLE_MAX_LENGTH,
        InvalidTitle,
        chat_workspace_id,
        shorten_title,
        thread_claim,
        thread_copy,
        thread_create,
        thread_delete,
        thread_delete_by_id,
        thread_id_segment_problem,
        thread_lock,
        thread_mark_graph,
        thread_not_found,
        thread_owned_by,
        thread_rename,
        thread_restart_clock,
        thread_touch,
        thread_update,
        title_from_messages,
        validate_title,
    )

__getattr__ = lazy_exports(__name__)
__all__ = [
    "CANCEL_ACK_SECONDS", "CommandError", "DEAD_RUN_ERROR", "Events", "ExecutorStarter", "Frame", "InterruptAnswered",
    "InvalidTitle", "MAX_THREAD_ID_LENGTH", "RESTARTED_ERROR", "ROLLBACK_KEY", "RunActive", "RunEnded",
    "RunKindPolicy", "StoreConfigError", "TITLE_LENGTH", "TITLE_MAX_LENGTH", "WireEvent", "after_run",
    "chat_workspace_id", "command_from", "configure_graphs", "db_run", "dumps", "end_frame", "events_append",
    "events_enforce_retention", "fail_runs_of_predecessor", "frame_channel", "get_checkpointer", "import_object",
    "lifecycle_event", "load_graph", "make_event", "notify_executors", "policy", "register", "run_cancel_queued",
    "run_cancel_request", "run_create", "run_create_answering", "run_end_if_orphaned", "run_fail_dead", "run_finish",
    "run_heartbeat", "run_made_progress", "run_orphan_reason", "run_register", "run_roll_back", "run_stop",
    "runs_fail_after_restart", "runs_sweep_dead", "shorten_title", "start_run", "store_config_check",
    "store_configure", "thread_claim", "thread_copy", "thread_create", "thread_delete", "thread_delete_by_id",
    "thread_id_segment_problem", "thread_lock", "thread_mark_graph", "thread_not_found", "thread_owned_by",
    "thread_rename", "thread_restart_clock", "thread_touch", "thread_ttl_configure", "thread_update",
    "title_from_messages", "to_jsonable", "updates_events", "validate_title",
]

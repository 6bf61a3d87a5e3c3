"""The runtime's rows as it writes them: threads and their owners (thread_records), chat runs and the dead-run
sweeper (run_records), and the event log with its retention (event_log). The other apps reach these through the
runtime's face, `agentruntime.services`.

All of these are synchronous ORM code; async callers go through `agentruntime.db_executor.run`.
"""

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

__all__ = [
    "CANCEL_ACK_SECONDS", "DEAD_RUN_ERROR", "MAX_THREAD_ID_LENGTH", "RESTARTED_ERROR", "ROLLBACK_KEY", "TITLE_LENGTH",
    "TITLE_MAX_LENGTH", "InterruptAnswered", "InvalidTitle", "RunActive", "RunEnded", "chat_workspace_id",
    "events_append", "events_enforce_retention", "run_cancel_queued", "run_cancel_request", "run_create",
    "run_create_answering", "run_end_if_orphaned", "run_fail_dead", "run_finish", "run_heartbeat",
    "run_made_progress", "run_orphan_reason", "run_register", "run_roll_back", "runs_fail_after_restart",
    "runs_sweep_dead", "shorten_title", "thread_claim", "thread_copy", "thread_create", "thread_delete",
    "thread_delete_by_id", "thread_id_segment_problem",
    "thread_lock", "thread_mark_graph", "thread_not_found", "thread_owned_by",
    "thread_rename", "thread_restart_clock", "thread_touch", "thread_update", "title_from_messages", "validate_title",
]

"""The runtime's rows as it writes them: threads and their owners (thread_records), chat runs and the dead-run
sweeper (run_records), and the event log with its retention (event_log). The runtime's own modules import these
modules; the other apps reach them through the runtime's face, `agentruntime.services`.

All of these are synchronous ORM code; async callers go through `agentruntime.db_executor.run`.
"""

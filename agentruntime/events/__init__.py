"""A thread's event log: the statements every run executes (statements) and the per-process fan-out of stored events
to their subscribers (hub)."""

"""Chat runs: starting one (start), the queue and the executor that claims queued runs (queue), executing one
(execution), stopping them (control) and the hooks awaited after each (hooks)."""

"""The crons scenario of the differential test (tests/agentserver/test_differential.py): create (stateless and on a
thread), read, search (filters, sort, paging, select), count, update, delete, and the errors of each. Schedules
are far apart (January the first) so that neither server fires a run while the scenario plays."""

from __future__ import annotations

from tests.agentserver.support_differential import Step

THREAD = "7d1f7c2e-0000-4000-8000-0000000000c1"
MISSING = "7d1f7c2e-0000-4000-8000-0000000000c9"
YEARLY = "0 0 1 1 *"


def cron_steps() -> list[Step]:
    return [
        Step("POST", "/threads", {"thread_id": THREAD, "metadata": {"for": "crons"}}),
        Step("POST", "/runs/crons", {"assistant_id": "echo", "schedule": YEARLY, "input": {"messages": []},
                                     "metadata": {"team": "c"}, "on_run_completed": "keep"}, save="stateless"),
        Step("POST", f"/threads/{THREAD}/runs/crons", {"assistant_id": "echo", "schedule": "0 0 1 1 1",
                                                        "metadata": {"team": "c", "kind": "thread"}, "enabled": False,
                                                        "end_time": "2100-01-01T00:00:00+00:00"}, save="on_thread"),
        Step("POST", "/runs/crons", {"assistant_id": "echo", "schedule": "every minute"}),
        Step("POST", "/runs/crons", {"assistant_id": "echo", "schedule": YEARLY, "timezone": "Mars/Base"}),
        Step("POST", "/runs/crons", {"assistant_id": MISSING, "schedule": YEARLY}),
        Step("POST", f"/threads/{MISSING}/runs/crons", {"assistant_id": "echo", "schedule": YEARLY}),
        Step("GET", "/runs/crons/{on_thread}"),
        Step("GET", f"/runs/crons/{MISSING}"),
        Step("GET", "/runs/crons/not-a-uuid"),
        Step("POST", "/runs/crons/search", {"metadata": {"team": "c"}}),
        Step("POST", "/runs/crons/search", {"metadata": {"team": "c"}, "sort_by": "created_at", "sort_order": "asc",
                                            "limit": 1, "offset": 1}),
        Step("POST", "/runs/crons/search", {"thread_id": THREAD, "select": ["cron_id", "schedule", "enabled"]}),
        Step("POST", "/runs/crons/search", {"enabled": False, "metadata": {"team": "c"}}),
        Step("POST", "/runs/crons/search", {"sort_by": "bogus"}),
        Step("POST", "/runs/crons/count", {"metadata": {"team": "c"}}),
        Step("POST", "/runs/crons/count", {"thread_id": THREAD}),
        Step("PATCH", "/runs/crons/{on_thread}", {"schedule": "30 6 1 1 *", "enabled": True,
                                                  "metadata": {"stage": "two"}, "input": {"messages": []}}),
        Step("PATCH", "/runs/crons/{on_thread}", {"end_time": None}),
        Step("PATCH", "/runs/crons/{on_thread}", {"schedule": "nope"}),
        Step("PATCH", "/runs/crons/{on_thread}", {}),
        Step("PATCH", f"/runs/crons/{MISSING}", {"enabled": False}),
        Step("DELETE", "/runs/crons/{stateless}"),
        Step("DELETE", "/runs/crons/{stateless}"),
        Step("GET", "/runs/crons/{stateless}"),
        Step("DELETE", f"/threads/{THREAD}"),
        Step("GET", "/runs/crons/{on_thread}"),
    ]

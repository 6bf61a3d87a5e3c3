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
from agentruntime.writes import *  # noqa: F403 - the writes' own face (agentruntime/writes/__init__.py)
from agentruntime.writes import __all__ as _writes

__all__ = [
    *_writes, "CommandError", "Events", "ExecutorStarter", "Frame", "RunKindPolicy", "StoreConfigError",
    "WireEvent", "after_run", "command_from", "configure_graphs", "db_run", "dumps", "end_frame",
    "fail_runs_of_predecessor", "frame_channel", "get_checkpointer", "import_object", "lifecycle_event",
    "load_graph", "make_event", "notify_executors", "policy", "register", "run_stop", "start_run",
    "store_config_check", "store_configure", "thread_ttl_configure", "to_jsonable", "updates_events",
]

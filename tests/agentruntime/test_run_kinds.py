"""Each kind of run is registered by the app that owns it, and the runtime refuses a kind nobody registered."""

from __future__ import annotations

import inspect

import pytest

from agentruntime.models import ChatRun
from agentruntime.runs.execution import stream_of
from agentruntime.runs.kinds import UnknownRunKind, policy


@pytest.mark.parametrize("kind", ChatRun.Kind.values)
def test_every_kind_of_run_has_a_policy_whose_stream_is_a_coroutine_function(kind):
    assert inspect.iscoroutinefunction(stream_of(policy(kind)))


def test_the_owning_apps_register_their_kinds():
    assert policy(ChatRun.Kind.PROTOCOL).stream.startswith("chat.")
    assert policy(ChatRun.Kind.AGENT_SERVER).stream.startswith("agentserver.")
    assert "agentserver.after_run.call_webhook" in policy(ChatRun.Kind.AGENT_SERVER).after_run


def test_a_kind_no_app_registered_is_refused_with_its_name():
    with pytest.raises(UnknownRunKind, match="'cron_batch'"):
        policy("cron_batch")

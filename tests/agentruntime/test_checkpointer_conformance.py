"""The official LangGraph checkpointer conformance suite, run against our Django saver.

The same file runs in the SQLite pass and in the PostgreSQL pass of CI.
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from agentruntime.checkpointer.saver import DjangoCheckpointSaver

# The async methods run on the saver's own threads and connections: they only see committed data.
pytestmark = pytest.mark.django_db(transaction=True)


@checkpointer_test(name="DjangoCheckpointSaver")
async def django_saver():
    saver = DjangoCheckpointSaver()
    try:
        yield saver
    finally:
        saver.close()


# Every capability the suite knows: the five base ones plus copy_thread, delete_for_runs and prune.
@pytest.mark.parametrize("capability", [capability.value for capability in Capability])
async def test_the_saver_passes_the_conformance_suite_for(capability):
    report = await validate(django_saver, capabilities={capability})

    result = report.results[capability]
    assert result.detected, f"{capability} is not implemented"
    assert result.passed, "\n".join(result.failures)
    assert result.tests_passed > 0 and result.tests_failed == 0

"""The revision status machine: no illegal transition is ever applied, and terminal statuses never change."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deployments import services, states
from deployments.models import Deployment, Revision
from deployments.states import ALLOWED, TERMINAL, RevisionStatus

STATUSES = list(RevisionStatus.values)
HAPPY_PATH = ["CREATING", "QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"]


def test_the_happy_path_follows_the_real_enum_and_every_live_status_can_end():
    assert all(states.can_transition(a, b) for a, b in zip(HAPPY_PATH, HAPPY_PATH[1:], strict=False))
    for status in set(STATUSES) - TERMINAL - {"UNKNOWN"}:
        assert {"SKIPPED", "INTERRUPTED"} <= ALLOWED[status]
        assert any(target.endswith("_FAILED") for target in ALLOWED[status])
    assert TERMINAL == {"CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "DEPLOYED", "SKIPPED", "INTERRUPTED"}
    assert all(ALLOWED[status] == frozenset() for status in TERMINAL)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(STATUSES), max_size=30))
def test_random_transition_sequences_only_follow_the_table(attempts):
    current = "CREATING"
    for target in attempts:
        was_terminal = states.is_terminal(current)
        if states.can_transition(current, target):
            assert not was_terminal and target in ALLOWED[current] and current in states.predecessors(target)
            current = target
        else:
            assert current not in states.predecessors(target)
        if was_terminal:
            assert states.is_terminal(current)


@pytest.fixture
def revision(db, workspace):
    deployment = Deployment.objects.create(workspace=workspace, name="machine", source="github")
    return Revision.objects.create(deployment=deployment, number=1, source="github")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(STATUSES), min_size=1, max_size=12))
def test_the_one_writer_of_statuses_never_applies_an_illegal_transition(revision, attempts):
    Revision.objects.filter(id=revision.id).update(status="CREATING")
    revision.status = "CREATING"
    for target in attempts:
        stored = Revision.objects.get(id=revision.id).status
        applied = services.revision_transition(revision=revision, to=target)
        after = Revision.objects.get(id=revision.id).status
        assert applied == states.can_transition(stored, target)
        assert after == (target if applied else stored)
        if states.is_terminal(stored):
            assert after == stored


def test_of_two_racing_writers_only_one_wins(revision):
    Revision.objects.filter(id=revision.id).update(status="BUILDING")
    worker_copy, request_copy = Revision.objects.get(id=revision.id), Revision.objects.get(id=revision.id)
    assert services.revision_transition(revision=request_copy, to="INTERRUPTED")
    # The worker still believes the revision is BUILDING; the conditional update refuses it.
    assert not services.revision_transition(revision=worker_copy, to="AWAITING_DEPLOY")
    assert Revision.objects.get(id=revision.id).status == "INTERRUPTED"

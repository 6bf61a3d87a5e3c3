"""A hub's subscribers with one filter share its frames: one batch object for all of them, kept until all took it."""

from __future__ import annotations

from agentruntime.events import hub
from agentruntime.events.hub import BATCH_BYTES, FilterGroup, Subscriber
from agentruntime.events.subscriptions import Subscription

CUSTOM = Subscription(channels=frozenset({"custom"}))


def frame(seq: int, size: int = 100) -> bytes:
    return b"id: %d\ndata: %s\n\n" % (seq, b"x" * size)


def group_of(count: int) -> tuple[FilterGroup, list[Subscriber]]:
    group = FilterGroup(CUSTOM)
    subscribers = [Subscriber(CUSTOM) for _ in range(count)]
    for subscriber in subscribers:
        group.join(subscriber)
    return group, subscribers


def test_subscribers_with_one_filter_receive_the_same_bytes_object():
    group, (first, second) = group_of(2)
    group.append([1, 2], [frame(1), frame(2)])
    taken_first, taken_second = first.take_batches(), second.take_batches()
    assert [b.seqs for b in taken_first] == [[1, 2]]
    assert taken_first[0].data is taken_second[0].data
    assert taken_first[0].data == frame(1) + frame(2)


def test_a_batch_is_dropped_once_every_subscriber_has_taken_it():
    group, (first, second) = group_of(2)
    group.append([1], [frame(1)])
    first.take_batches()
    group.append([2], [frame(2)])
    assert [b.seqs for b in group.batches] == [[1], [2]]  # the second subscriber has not taken seq 1 yet
    second.take_batches()
    first.take_batches()
    group.append([3], [frame(3)])
    assert [b.seqs for b in group.batches] == [[3]]
    assert [b.seqs for b in second.take_batches()] == [[3]]


def test_a_subscriber_joining_later_gets_only_what_is_appended_after_it_joined():
    group, (first,) = group_of(1)
    group.append([1], [frame(1)])
    late = Subscriber(CUSTOM)
    group.join(late)
    group.append([2], [frame(2)])
    assert [b.seqs for b in late.take_batches()] == [[2]]
    assert [b.seqs for b in first.take_batches()] == [[1], [2]]


def test_a_large_dispatch_is_split_into_batches_and_taken_a_budget_at_a_time():
    group, (subscriber,) = group_of(1)
    seqs = list(range(1, 1001))
    group.append(seqs, [frame(seq) for seq in seqs])
    assert len(group.batches) > 1 and all(len(b.data) <= BATCH_BYTES + len(frame(1)) for b in group.batches)
    taken = []
    while subscriber.wakeup.is_set():
        batches = subscriber.take_batches(max_bytes=BATCH_BYTES)
        assert sum(len(b.data) for b in batches) <= BATCH_BYTES + len(frame(1))
        taken += [seq for batch in batches for seq in batch.seqs]
    assert taken == seqs
    assert subscriber.take_batches(max_bytes=BATCH_BYTES) == []


def test_a_subscriber_too_far_behind_overflows_and_no_longer_holds_frames_back(monkeypatch):
    monkeypatch.setattr(hub, "MAX_PENDING_FRAMES", 10)
    group, (reader, laggard) = group_of(2)
    for seq in range(1, 13):
        group.append([seq], [frame(seq)])
        reader.take_batches()
    assert laggard.overflowed and not reader.overflowed
    group.append([13], [frame(13)])
    assert [b.seqs for b in group.batches] == [[13]]
    # What it gets next must follow what it had, with no gap: here, nothing (its stream ends; the client resumes).
    assert laggard.take_batches() == []


def test_take_keeps_the_frame_by_frame_form_for_agent_server_streams():
    group, (subscriber,) = group_of(1)
    group.append([4, 5], [frame(4), frame(5)])
    assert subscriber.take() == [(4, frame(4)), (5, frame(5))]
    assert not subscriber.wakeup.is_set()

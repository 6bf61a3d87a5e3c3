"""The history of DeltaChannels for agentruntime/checkpointer/saver.py: the nearest stored value and the writes since.

LangGraph rebuilds a DeltaChannel's value from the nearest ancestor checkpoint that stores it (the
seed) and the channel's writes on the way there. The base class walks there with one `get_tuple` per
ancestor, loading every channel's values: for the deep agent's `files` channel, which is rarely
written, that is the whole namespace's history on every step, two queries and all blobs per ancestor.
Here the walk reads the parent chain in pages (one recursive query each), asks which candidate seeds
have a blob, then loads only the channels' writes and seed values, in one more round trip.

The result is the base class's, entry for entry (tests/agentruntime/test_checkpoint_history.py compares
them): a seed is the channel's inline value or else its non-empty blob; writes run oldest checkpoint
first, each checkpoint's in `writes_sort_key` order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import DeltaChannelHistory, get_checkpoint_id, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from agentruntime.checkpointer.queries import CheckpointStore

# Ancestors per page. A walk ends at the nearest stored value (the deep agent stores `messages` every 50 updates),
# so most walks fit in the first page; the later ones are larger to keep long walks to few round trips.
FIRST_PAGE, PAGE = 100, 500


def _bytes(value: Any) -> bytes:
    return bytes(value) if isinstance(value, memoryview) else value


class _Walk:
    """Each channel's chain of ancestors (nearest first) and its seed, once found."""

    def __init__(self, channels: Sequence[str]) -> None:
        self.open = set(channels)
        self.chains: dict[str, list[str]] = {channel: [] for channel in channels}
        self.inline_seeds: dict[str, Any] = {}
        self.blob_seeds: dict[str, str] = {}  # channel -> version

    def take(self, rows: Sequence[tuple[str, dict]], stored: set[tuple[str, str]]) -> None:
        """Walk the page's (checkpoint_id, decoded checkpoint) rows, given the blobs that hold values."""
        for channel in list(self.open):
            for checkpoint_id, checkpoint in rows:
                self.chains[channel].append(checkpoint_id)
                version = checkpoint["channel_versions"].get(channel)
                if channel in checkpoint["channel_values"]:
                    self.inline_seeds[channel] = checkpoint["channel_values"][channel]
                elif version is not None and (channel, str(version)) in stored:
                    self.blob_seeds[channel] = str(version)
                else:
                    continue
                self.open.discard(channel)
                break


def delta_channel_history(
    store: CheckpointStore,
    serde: SerializerProtocol,
    config: RunnableConfig,
    channels: Sequence[str],
    *,
    pages: tuple[int, int] = (FIRST_PAGE, PAGE),
) -> dict[str, DeltaChannelHistory]:
    """`BaseCheckpointSaver.get_delta_channel_history` in a few queries; sync, on the caller's connection."""
    if not channels:
        return {}
    configurable = config["configurable"]
    thread_id, ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
    target = get_checkpoint_id(config) or next((row[2] for row in store.select(thread_id, ns, None)), None)
    walk = _Walk(channels)
    if target is not None:
        _walk_ancestors(store, serde, walk, thread_id, ns, target, pages)
    chains = {channel: chain for channel, chain in walk.chains.items() if chain}
    rows = store.channel_writes_and_blobs(thread_id, ns, chains, list(walk.blob_seeds.items()))
    return _histories(serde, walk, channels, rows)


def _walk_ancestors(
    store: CheckpointStore,
    serde: SerializerProtocol,
    walk: _Walk,
    thread_id: str,
    ns: str,
    target: str,
    pages: tuple[int, int],
) -> None:
    """Feed the walk the target's ancestors, a page at a time, until every channel has its seed."""
    seen: set[str] = set()
    start: str | None = target
    count, skip = pages[0], 1  # the first page opens with the target itself
    while start is not None and walk.open:
        page = store.ancestors(thread_id, ns, start, count)
        decoded = []
        for checkpoint_id, _, type_, data in page[skip:]:
            if checkpoint_id in seen:  # parent links that loop back (a checkpoint saved as its own parent): stop
                page = []
                break
            seen.add(checkpoint_id)
            decoded.append((checkpoint_id, serde.loads_typed((type_, _bytes(data)))))
        candidates = {
            (channel, str(checkpoint["channel_versions"][channel]))
            for _, checkpoint in decoded
            for channel in walk.open
            if channel in checkpoint["channel_versions"]
        }
        walk.take(decoded, store.stored_blobs(thread_id, ns, candidates) if candidates else set())
        # A short page reached the root, or a parent that is gone.
        start = page[-1][1] if len(page) == count else None
        count, skip = pages[1], 0


def _histories(
    serde: SerializerProtocol, walk: _Walk, channels: Sequence[str], rows: list[tuple]
) -> dict[str, DeltaChannelHistory]:
    blobs, writes = {}, defaultdict(list)
    for kind, channel, key, type_, blob, task_id, task_path, idx in rows:
        if kind == 0:
            blobs[(channel, key)] = (type_, blob)
        else:
            writes[(channel, key)].append((task_path, task_id, idx, type_, blob))
    result: dict[str, DeltaChannelHistory] = {}
    for channel in channels:
        collected = []
        for checkpoint_id in reversed(walk.chains[channel]):  # oldest first
            for _, task_id, _, type_, blob in sorted(
                writes.get((channel, checkpoint_id), []), key=lambda w: writes_sort_key(*w[:3])
            ):
                collected.append((task_id, channel, serde.loads_typed((type_, _bytes(blob)))))
        entry: DeltaChannelHistory = {"writes": collected}
        if channel in walk.blob_seeds:
            # Gone since it was found only if a prune or a delete ran meanwhile: then no seed.
            if (stored := blobs.get((channel, walk.blob_seeds[channel]))) is not None:
                entry["seed"] = serde.loads_typed((stored[0], _bytes(stored[1])))
        elif channel in walk.inline_seeds:
            entry["seed"] = walk.inline_seeds[channel]
        result[channel] = entry
    return result

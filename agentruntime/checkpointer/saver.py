"""The LangGraph checkpointer of the chat: checkpoints in our own database, through Django.

`DjangoCheckpointSaver` keeps checkpoints, channel values and pending writes in the chat app's
tables (agentruntime/models.py, queries in agentruntime/checkpointer/queries.py), so the same code runs on SQLite and
PostgreSQL and every server process sees the same threads. It passes the official
langgraph-checkpoint-conformance suite: all base capabilities plus copy_thread, delete_for_runs
and prune.

Sync methods run on the calling thread, with that thread's Django connection (and transaction).
Async methods (de)serialise on the caller's side, like LangGraph's own async savers, and send
the queries to the saver's worker threads, each with a persistent connection of its own: one hop
per call and never a wait on an event loop, so they cannot deadlock whichever thread or loop
awaits them. Use `get_checkpointer()` for the process-wide instance.
"""

from __future__ import annotations

import builtins
import functools
import json
import random
import threading
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.base import SerializerProtocol

from agentruntime.checkpointer.history import delta_channel_history
from agentruntime.checkpointer.queries import CheckpointStore, batches
from agentruntime.checkpointer.workers import Workers

PRUNE_STRATEGIES = ("keep_latest", "delete")


def _require_strict_msgpack() -> None:
    # langgraph reads LANGGRAPH_STRICT_MSGPACK once, when first imported; core/settings_env.py sets it.
    if not _msgpack.STRICT_MSGPACK_ENABLED:
        raise ImproperlyConfigured(
            "LANGGRAPH_STRICT_MSGPACK must be true, and set before langgraph is first imported "
            "(core/settings_env.py sets it by default): checkpoints must not rebuild arbitrary objects."
        )


def _is_inline(value: Any) -> bool:
    # Scalars stay inside the checkpoint row, as in the Postgres saver; the rest go to blobs.
    return value is None or isinstance(value, (str, int, float, bool))


def _bytes(value: Any) -> bytes:
    return bytes(value) if isinstance(value, memoryview) else value


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}}


class _Fetched(NamedTuple):
    """Checkpoint rows as read, before their channel values and writes are deserialised."""

    rows: list[tuple]
    checkpoints: list[Checkpoint]  # the rows' checkpoints, with their inline values only
    found: list[tuple]  # (thread_id, ns, kind, channel, version or checkpoint_id, type, blob, task_id, path, idx)


class DjangoCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver on Django's database (SQLite and PostgreSQL).

    Args:
        using: The Django database alias.
        serde: The serializer; by default LangGraph's JsonPlusSerializer in strict msgpack mode.
        workers: Threads (and connections) for the async methods; by default 1 on SQLite, which
            has one writer at a time anyway, and 4 on PostgreSQL.
    """

    def __init__(self, *, using: str = "default", serde: SerializerProtocol | None = None, workers: int | None = None):
        _require_strict_msgpack()
        super().__init__(serde=serde)
        self._store = CheckpointStore(using)
        vendor = connections[using].vendor
        self._workers = Workers(using, workers or (1 if vendor == "sqlite" else 4))

    def close(self) -> None:
        """Close the worker threads' database connections; the next async call reopens them."""
        self._workers.close_connections()

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """Return the next version of a channel.

        The random fraction keeps versions unique across forks: two branches that both move a
        channel on from version 3 must not share the blob stored under version 4.

        Args:
            current: The channel's current version, if any.
            channel: Unused; kept for the base class signature.

        Returns:
            A version that sorts after `current`.
        """
        number = 0 if current is None else current if isinstance(current, int) else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # --- sync API ----------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Load the checkpoint named by `checkpoint_id`, else the latest of the namespace.

        Args:
            config: `configurable` holds `thread_id`, and optionally `checkpoint_ns` and `checkpoint_id`.

        Returns:
            The checkpoint with its metadata, parent config and pending writes, or None.
        """
        return next(iter(self._build(self._fetch_one(config))), None)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Restricts to a thread, and to a namespace or a checkpoint when they are given.
            filter: Metadata that must match, key by key (on SQLite and PostgreSQL alike).
            before: Only checkpoints older than this config's checkpoint.
            limit: At most this many.

        Returns:
            An iterator of checkpoint tuples.
        """
        return iter(self._build(self._fetch_many(config, filter, before, limit)))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and its changed channel values, in one transaction.

        Args:
            config: The thread, the namespace and the parent checkpoint (`checkpoint_id`).
            checkpoint: The checkpoint.
            metadata: Its metadata.
            new_versions: The channels whose values are new in this checkpoint.

        Returns:
            The config of the stored checkpoint.
        """
        stored, params, blobs = self._checkpoint_rows(config, checkpoint, metadata, new_versions)
        self._store.store_checkpoint(params, blobs)
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for a checkpoint, idempotently.

        A repeated (task_id, idx) is ignored, except that errors, interrupts and resumes (fixed
        negative indexes) replace the stored one, as in LangGraph's own savers.

        Args:
            config: The checkpoint the writes belong to.
            writes: (channel, value) pairs.
            task_id: The task that made them.
            task_path: The task's path, which orders the writes of a super-step.
        """
        self._store.store_writes(*self._write_rows(config, writes, task_id, task_path))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Walk to each DeltaChannel's nearest stored value, collecting its writes on the way.

        Same result as the base class's walk, in a few queries rather than two per ancestor
        (agentruntime/checkpointer/history.py).

        Args:
            config: The checkpoint whose ancestors to walk; the namespace's latest without `checkpoint_id`.
            channels: The channels to walk for.

        Returns:
            Each channel's writes, oldest first, and its `seed` when an ancestor stores a value.
        """
        return delta_channel_history(self._store, self.serde, config, channels)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces.

        Args:
            thread_id: The thread.
        """
        self._store.delete_threads([str(thread_id)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the given runs created, their writes and the blobs only they used.

        A remaining checkpoint whose parent goes is left without a parent. Do not delete runs of a
        thread while another run writes to it.

        Args:
            run_ids: The runs (metadata `run_id`).
        """
        if run_ids := [str(run_id) for run_id in run_ids]:
            self._store.delete_for_runs(run_ids, self._blob_keys)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, blob and write of a thread to another thread id.

        Rows the target already has stay as they are.

        Args:
            source_thread_id: The thread to copy.
            target_thread_id: The thread to copy it to.
        """
        self._store.copy_thread(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads.

        `"delete"` removes everything of the threads. `"keep_latest"` keeps the latest checkpoint of
        each namespace with its pending writes and the blobs it uses, and drops a subgraph call's
        namespace once the root checkpoint it started from is gone. Each thread is pruned in one
        transaction (REPEATABLE READ on PostgreSQL), so a run appending meanwhile is safe; forking
        from a checkpoint being pruned is not.

        Args:
            thread_ids: The threads.
            strategy: `"keep_latest"` or `"delete"`.

        Raises:
            TypeError: If `thread_ids` is a single string.
            ValueError: If the strategy is unknown.
            NotImplementedError: For `"keep_latest"` when a thread uses a DeltaChannel, whose value
                is rebuilt from older checkpoints (nothing is pruned then).
        """
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not a str")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        ids = [str(thread_id) for thread_id in thread_ids]
        if ids and strategy == "delete":
            self._store.delete_threads(ids)
        elif ids:
            self._store.refuse_delta_threads(ids)
            for thread_id in ids:
                self._store.keep_latest(thread_id, self._blob_keys)

    # --- async API: (de)serialise here, query on a worker thread ------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async `get_tuple`."""
        return next(iter(self._build(await self._workers.run(self._fetch_one, config))), None)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        """Async `list`."""
        for item in self._build(await self._workers.run(self._fetch_many, config, filter, before, limit)):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """Async `put`."""
        stored, params, blobs = self._checkpoint_rows(config, checkpoint, metadata, new_versions)
        await self._workers.run(self._store.store_checkpoint, params, blobs)
        return stored

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Async `put_writes`."""
        await self._workers.run(self._store.store_writes, *self._write_rows(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async `delete_thread`."""
        await self._workers.run(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async `delete_for_runs`."""
        await self._workers.run(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_thread`."""
        await self._workers.run(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async `prune`."""
        await self._workers.run(functools.partial(self.prune, thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async `get_delta_channel_history`: the whole ancestor walk in one hop."""
        walk = functools.partial(self.get_delta_channel_history, config=config, channels=channels)
        return await self._workers.run(walk)

    # --- serialising -------------------------------------------------------------------------------

    def _checkpoint_rows(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions
    ) -> tuple[RunnableConfig, builtins.list[Any], builtins.list[tuple]]:
        """Serialise a checkpoint: its stored config, its row's parameters and its new blob rows."""
        configurable = config["configurable"]
        thread_id, ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        values = checkpoint["channel_values"]
        blobs = [
            (thread_id, ns, channel, str(version), *self.serde.dumps_typed(values[channel]))
            for channel, version in versions.items()
            if channel in values and not _is_inline(values[channel])
        ]
        inline = {**checkpoint, "channel_values": {k: v for k, v in values.items() if _is_inline(v)}}
        row = (thread_id, ns, checkpoint["id"], configurable.get("checkpoint_id"), *self.serde.dumps_typed(inline))
        meta = get_serializable_checkpoint_metadata(config, metadata)
        run_id = None if meta.get("run_id") is None else str(meta["run_id"])
        return _config(thread_id, ns, checkpoint["id"]), self._store.checkpoint_params(row, meta, run_id), blobs

    def _write_rows(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> tuple[builtins.list[tuple], bool]:
        """`CheckpointStore.store_writes`'s arguments."""
        configurable = config["configurable"]
        key = (str(configurable["thread_id"]), configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"])
        rows = [
            (*key, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        return rows, all(channel in WRITES_IDX_MAP for channel, _ in writes)

    def _blob_keys(self, type_: str, data: Any) -> set[tuple[str, str]]:
        return self._keys_of(self.serde.loads_typed((type_, _bytes(data))))

    @staticmethod
    def _keys_of(checkpoint: Checkpoint) -> set[tuple[str, str]]:
        """The (channel, version) blobs a checkpoint uses: those of its channels not stored inline."""
        inline = checkpoint["channel_values"]
        return {(channel, str(v)) for channel, v in checkpoint["channel_versions"].items() if channel not in inline}

    # --- loading: fetch (queries, on a worker for async calls), then build ------------------------

    def _fetch_one(self, config: RunnableConfig) -> _Fetched:
        configurable = config["configurable"]
        thread_id, ns = str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")
        return self._fetch(self._store.select(thread_id, ns, get_checkpoint_id(config)))

    def _fetch_many(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> _Fetched:
        configurable = (config or {}).get("configurable") or {}
        before_id = get_checkpoint_id(before) if before else None
        return self._fetch(self._store.select_many(configurable, filter, before_id, limit))

    def _fetch(self, rows: builtins.list[tuple]) -> _Fetched:
        """Read the blobs and writes of checkpoint rows: one query per namespace (per 100 checkpoints)."""
        checkpoints = [self.serde.loads_typed((row[4], _bytes(row[5]))) for row in rows]
        by_namespace: dict[tuple[str, str], list[int]] = defaultdict(list)
        for n, row in enumerate(rows):
            by_namespace[(row[0], row[1])].append(n)
        found: list[tuple] = []
        for (thread_id, ns), members in by_namespace.items():
            for chunk in batches(members, 100):
                keys = set().union(*(self._keys_of(checkpoints[n]) for n in chunk))
                ids = [rows[n][2] for n in chunk]
                found.extend((thread_id, ns, *r) for r in self._store.values_and_writes(thread_id, ns, keys, ids))
        return _Fetched(rows, checkpoints, found)

    def _build(self, fetched: _Fetched) -> builtins.list[CheckpointTuple]:
        """Deserialise channel values and pending writes into checkpoint tuples."""
        blobs, writes = {}, defaultdict(list)
        for thread_id, ns, kind, channel, key, type_, blob, task_id, task_path, idx in fetched.found:
            if kind == 0:
                blobs[(thread_id, ns, channel, key)] = (type_, blob)
            else:
                writes[(thread_id, ns, key)].append((task_path, task_id, idx, channel, type_, blob))
        tuples = []
        for row, checkpoint in zip(fetched.rows, fetched.checkpoints, strict=True):
            thread_id, ns, checkpoint_id, parent_id, _, _, metadata = row
            values = checkpoint["channel_values"]
            for channel, version in list(checkpoint["channel_versions"].items()):
                stored = None if channel in values else blobs.get((thread_id, ns, channel, str(version)))
                if stored and stored[0] != "empty":
                    values[channel] = self.serde.loads_typed((stored[0], _bytes(stored[1])))
            # Sorted here rather than in SQL, so the order never depends on the database's collation.
            own = sorted(writes.get((thread_id, ns, checkpoint_id), []), key=lambda w: writes_sort_key(*w[:3]))
            tuples.append(
                CheckpointTuple(
                    config=_config(thread_id, ns, checkpoint_id),
                    checkpoint=checkpoint,
                    metadata=json.loads(metadata) if isinstance(metadata, (str, bytes)) else metadata,
                    parent_config=_config(thread_id, ns, parent_id) if parent_id else None,
                    pending_writes=[(w[1], w[3], self.serde.loads_typed((w[4], _bytes(w[5])))) for w in own],
                )
            )
        return tuples


_instance: DjangoCheckpointSaver | None = None
_instance_lock = threading.Lock()


def get_checkpointer() -> DjangoCheckpointSaver:
    """Return the process-wide checkpointer, created on first use."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = DjangoCheckpointSaver()
        return _instance


def close_checkpointer() -> None:
    """Close the process-wide checkpointer's worker connections, if it exists (tests, shutdown)."""
    if _instance is not None:
        _instance.close()

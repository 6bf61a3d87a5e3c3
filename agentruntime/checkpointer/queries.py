"""The database side of the chat checkpointer (agentruntime/checkpointer/saver.py): every query it makes. Its
async methods run them on worker threads (agentruntime/checkpointer/workers.py).

Nothing here (de)serialises channel values; the saver does that on the caller's side. The hot paths
(load, put, put_writes) send SQL built once from the models' metadata, because building the same
query with the ORM costs about fifteen times more than sending it (≈250 µs against ≈16 µs on
SQLite). The text runs on SQLite (3.24+, for ON CONFLICT) and PostgreSQL alike. The rare
operations (filtered lists, deletes, copies, pruning) use the ORM.
"""

from __future__ import annotations

import functools
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

from django.db import connections, transaction
from django.db.models import Max, Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from agentruntime.models import Checkpoint, CheckpointBlob, CheckpointWrite

CHECKPOINT_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint")
ROW_COLUMNS = (*CHECKPOINT_COLUMNS, "metadata")
BLOB_COLUMNS = ("thread_id", "checkpoint_ns", "channel", "version", "type", "blob")
WRITE_COLUMNS = (
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "task_path",
    "idx",
    "channel",
    "type",
    "blob",
)
# Rows or ids per statement: well under SQLite's and PostgreSQL's parameter limits.
BATCH = 500
# The three tables copied row by row (a constrained type: each is checked on its own).
_CheckpointModel = TypeVar("_CheckpointModel", Checkpoint, CheckpointBlob, CheckpointWrite)
# Metadata keys a DeltaChannel leaves; keep_latest would cut the history its value is rebuilt from.
DELTA_MARKERS = ("counters_since_delta_snapshot", "delta_writes_versioned")

# (type, serialised checkpoint) -> the (channel, version) blobs that checkpoint uses.
BlobKeys = Callable[[str, Any], set[tuple[str, str]]]


def batches(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _placeholders(count: int) -> str:
    return ", ".join(["%s"] * count)


class CheckpointStore:
    """The checkpoint tables of one database alias."""

    def __init__(self, using: str) -> None:
        self.using = using
        connection = connections[using]
        self.vendor = connection.vendor
        # Only for adapting parameters (JSON, datetimes), which needs no connection.
        self.ops = connection.ops
        q = self.q = connection.ops.quote_name
        self.checkpoints, self.blobs, self.writes = (
            q(m._meta.db_table) for m in (Checkpoint, CheckpointBlob, CheckpointWrite)
        )
        self._select = (
            f"SELECT {self._columns(ROW_COLUMNS)} FROM {self.checkpoints} "
            f"WHERE {q('thread_id')} = %s AND {q('checkpoint_ns')} = %s"
        )
        self._select_one = f"{self._select} AND {q('checkpoint_id')} = %s"
        self._select_latest = f"{self._select} ORDER BY {q('checkpoint_id')} DESC LIMIT 1"
        stored = (*ROW_COLUMNS, "run_id", "created_at")
        # Putting a checkpoint again (same id) replaces it, as in the Postgres saver; parent and creation time stay.
        self._upsert_checkpoint = (
            f"INSERT INTO {self.checkpoints} ({self._columns(stored)}) VALUES ({_placeholders(len(stored))}) "
            f"ON CONFLICT ({self._columns(ROW_COLUMNS[:3])}) DO UPDATE SET "
            + ", ".join(f"{q(c)} = EXCLUDED.{q(c)}" for c in ("type", "checkpoint", "metadata", "run_id"))
        )
        self._statements: dict[tuple, str] = {}

    def _columns(self, names: Iterable[str]) -> str:
        return ", ".join(self.q(name) for name in names)

    def _statement(self, key: tuple, build: Callable[[], str]) -> str:
        """A statement built once per shape (kind and row counts); the cache stays small."""
        if (sql := self._statements.get(key)) is None:
            if len(self._statements) > 1000:
                self._statements.clear()
            sql = self._statements[key] = build()
        return sql

    def _execute(self, connection, sql: str, params: Sequence[Any]) -> list[tuple]:
        # The driver's own cursor: Django's wrapper costs ≈40 µs a statement here (SQLite's %s-to-?
        # rewrite alone ≈20 µs). Kept from Django: the async-safety check (ensure_connection), the
        # connection's transaction state and its error translation.
        connection.ensure_connection()
        if self.vendor == "sqlite":
            sql = self._statement(("qmark", sql), lambda: sql.replace("%s", "?"))
        with connection.wrap_database_errors:
            cursor = connection.connection.cursor()
            try:
                cursor.execute(sql, params)
                return cursor.fetchall() if cursor.description else []
            finally:
                cursor.close()

    # --- reads -------------------------------------------------------------------------------------

    def select(self, thread_id: str, ns: str, checkpoint_id: str | None) -> list[tuple]:
        """The named checkpoint row, or the namespace's latest."""
        connection = connections[self.using]
        if checkpoint_id:
            return self._execute(connection, self._select_one, [thread_id, ns, checkpoint_id])
        return self._execute(connection, self._select_latest, [thread_id, ns])

    def select_many(
        self, configurable: dict, filter: dict[str, Any] | None, before_id: str | None, limit: int | None
    ) -> list[tuple]:
        rows = Checkpoint.objects.using(self.using).all()
        if configurable.get("thread_id") is not None:
            rows = rows.filter(thread_id=str(configurable["thread_id"]))
        if configurable.get("checkpoint_ns") is not None:
            rows = rows.filter(checkpoint_ns=configurable["checkpoint_ns"])
        if configurable.get("checkpoint_id"):
            rows = rows.filter(checkpoint_id=configurable["checkpoint_id"])
        for n, (key, value) in enumerate((filter or {}).items()):
            # KeyTransform sends the key as a parameter: any key is safe, on both databases.
            rows = rows.alias(**{f"_meta{n}": KeyTransform(key, "metadata")}).filter(**{f"_meta{n}": value})
        if before_id:
            rows = rows.filter(checkpoint_id__lt=before_id)
        rows = rows.order_by("-checkpoint_id")
        return list((rows[: int(limit)] if limit is not None else rows).values_list(*ROW_COLUMNS))

    def values_and_writes(self, thread_id: str, ns: str, keys: set[tuple[str, str]], checkpoint_ids: Sequence[str]):
        """Blob rows (kind 0) and write rows (kind 1) of checkpoints of one namespace, in one round trip.

        Rows are (kind, channel, version or checkpoint_id, type, blob, task_id, task_path, idx). Blobs
        match by channel and by version separately, so a few unasked combinations may come back.
        """
        channels, versions = sorted({c for c, _ in keys}), sorted({v for _, v in keys})
        shape = ("values_and_writes", len(channels), len(versions), len(checkpoint_ids))
        sql = self._statement(shape, lambda: self._values_and_writes_sql(*shape[1:]))
        params = [thread_id, ns, *checkpoint_ids]
        if keys:
            params = [thread_id, ns, *channels, *versions, *params]
        return self._execute(connections[self.using], sql, params)

    def _values_and_writes_sql(self, channels: int, versions: int, checkpoints: int) -> str:
        q = self.q
        scope = f"{q('thread_id')} = %s AND {q('checkpoint_ns')} = %s"
        writes = (
            f"SELECT 1, {self._columns(('channel', 'checkpoint_id', 'type', 'blob', 'task_id', 'task_path', 'idx'))} "
            f"FROM {self.writes} WHERE {scope} AND {q('checkpoint_id')} IN ({_placeholders(checkpoints)})"
        )
        if not channels:
            return writes
        return (
            f"SELECT 0, {self._columns(('channel', 'version', 'type', 'blob'))}, NULL, NULL, NULL "
            f"FROM {self.blobs} WHERE {scope} AND {q('channel')} IN ({_placeholders(channels)}) "
            f"AND {q('version')} IN ({_placeholders(versions)}) UNION ALL {writes}"
        )

    # --- delta channel history (agentruntime/checkpointer/history.py) ---------------------------------------

    def ancestors(self, thread_id: str, ns: str, checkpoint_id: str, count: int) -> list[tuple]:
        """A checkpoint and its ancestors, nearest first, `count` rows at most, by parent links.

        Rows are (checkpoint_id, parent_checkpoint_id, type, checkpoint). Parent links rather than id
        order: an id sorts after its parent's only when one clock made both.
        """
        sql = self._statement(("ancestors",), self._ancestors_sql)
        return self._execute(connections[self.using], sql, [thread_id, ns, checkpoint_id, count - 1])

    def _ancestors_sql(self) -> str:
        q, key = self.q, ("thread_id", "checkpoint_ns", "checkpoint_id")
        columns = (*key, "parent_checkpoint_id", "type", "checkpoint")
        # Each step is one lookup of the whole unique key. The key comes from the previous row, not
        # from parameters: given the thread and namespace, PostgreSQL scans the namespace per step.
        # CROSS JOIN keeps SQLite from doing the same; PostgreSQL has no CROSS JOIN ... ON.
        join = "CROSS JOIN" if self.vendor == "sqlite" else "JOIN"
        step = " AND ".join(f"c.{q(k)} = a.{q(k)}" for k in key[:2])
        return (
            f"WITH RECURSIVE chain({self._columns(columns)}, depth) AS ("
            f"SELECT {self._columns(columns)}, 0 FROM {self.checkpoints} "
            f"WHERE {q('thread_id')} = %s AND {q('checkpoint_ns')} = %s AND {q('checkpoint_id')} = %s "
            f"UNION ALL SELECT {', '.join(f'c.{q(c)}' for c in columns)}, a.depth + 1 "
            f"FROM chain a {join} {self.checkpoints} c ON {step} "
            f"AND c.{q('checkpoint_id')} = a.{q('parent_checkpoint_id')} WHERE a.depth < %s"
            f") SELECT {self._columns(columns[2:])} FROM chain ORDER BY depth"
        )

    def stored_blobs(self, thread_id: str, ns: str, keys: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of the (channel, version) keys that have a blob holding a value."""
        channels, versions = sorted({c for c, _ in keys}), sorted({v for _, v in keys})
        found: set[tuple[str, str]] = set()
        for chunk in batches(versions, BATCH - len(channels)):
            shape = ("stored_blobs", len(channels), len(chunk))
            sql = self._statement(shape, functools.partial(self._stored_blobs_sql, len(channels), len(chunk)))
            rows = self._execute(connections[self.using], sql, [thread_id, ns, *channels, *chunk])
            found.update((channel, version) for channel, version in rows if (channel, version) in keys)
        return found

    def _stored_blobs_sql(self, channels: int, versions: int) -> str:
        q = self.q
        return (
            f"SELECT {q('channel')}, {q('version')} FROM {self.blobs} "
            f"WHERE {q('thread_id')} = %s AND {q('checkpoint_ns')} = %s "
            f"AND {q('channel')} IN ({_placeholders(channels)}) AND {q('version')} IN ({_placeholders(versions)}) "
            f"AND {q('type')} <> 'empty'"
        )

    def channel_writes_and_blobs(
        self, thread_id: str, ns: str, chains: Mapping[str, Sequence[str]], blobs: Sequence[tuple[str, str]]
    ) -> list[tuple]:
        """One channel's writes on each chain of checkpoints, and the (channel, version) blobs.

        Rows are (kind, channel, checkpoint_id or version, type, blob, task_id, task_path, idx): kind 0
        for blobs, 1 for writes. One round trip unless the chains are long.
        """
        q = self.q
        scope = f"{q('thread_id')} = %s AND {q('checkpoint_ns')} = %s AND {q('channel')} = %s"
        parts = []
        writes = self._columns(("channel", "checkpoint_id", "type", "blob", "task_id", "task_path", "idx"))
        for channel, checkpoint_ids in chains.items():
            for chunk in batches(checkpoint_ids, BATCH - 3):
                sql = f"SELECT 1, {writes} FROM {self.writes} WHERE {scope} AND {q('checkpoint_id')} IN "
                parts.append((f"{sql}({_placeholders(len(chunk))})", [thread_id, ns, channel, *chunk]))
        # After the writes, whose columns give PostgreSQL the types of these NULLs.
        parts.extend(
            (
                f"SELECT 0, {self._columns(('channel', 'version', 'type', 'blob'))}, NULL, NULL, CAST(NULL AS INTEGER) "
                f"FROM {self.blobs} WHERE {scope} AND {q('version')} = %s",
                [thread_id, ns, channel, version],
            )
            for channel, version in blobs
        )
        rows, connection = [], connections[self.using]
        while parts:
            # As many parts per statement as stay under the parameter budget (one at least).
            size, budget = 1, len(parts[0][1])
            while size < len(parts) and budget + len(parts[size][1]) <= BATCH:
                budget += len(parts[size][1])
                size += 1
            group, parts = parts[:size], parts[size:]
            sql = " UNION ALL ".join(sql for sql, _ in group)
            rows.extend(self._execute(connection, sql, [p for _, params in group for p in params]))
        return rows

    # --- writes ------------------------------------------------------------------------------------

    def checkpoint_params(self, row: tuple, metadata: Mapping[str, Any], run_id: str | None) -> list[Any]:
        """The parameters of a checkpoint upsert (no database access: callers build them off the worker)."""
        ops = self.ops
        return [*row, ops.adapt_json_value(metadata, None), run_id, ops.adapt_datetimefield_value(timezone.now())]

    def store_checkpoint(self, params: Sequence[Any], blobs: Sequence[tuple]) -> None:
        """Insert the new blobs, then upsert the checkpoint (`checkpoint_params`).

        Blobs go first, so whoever sees the checkpoint finds its values, and a (channel, version) is
        never rewritten. On PostgreSQL both go in one statement (one commit); on SQLite they are
        two autocommitted statements, where a crash in between leaves an unused blob that prune
        removes.
        """
        connection = connections[self.using]
        per_statement = BATCH // len(BLOB_COLUMNS)
        if self.vendor == "postgresql" and 0 < len(blobs) <= per_statement:
            sql = self._statement(
                ("checkpoint_with_blobs", len(blobs)),
                lambda: f"WITH new_blobs AS ({self._insert_blobs_sql(len(blobs))}) {self._upsert_checkpoint}",
            )
            self._execute(connection, sql, [*(p for blob in blobs for p in blob), *params])
            return
        with transaction.atomic(using=self.using) if len(blobs) > per_statement else nullcontext():
            for chunk in batches(blobs, per_statement):
                sql = self._statement(("blobs", len(chunk)), functools.partial(self._insert_blobs_sql, len(chunk)))
                self._execute(connection, sql, [p for blob in chunk for p in blob])
            self._execute(connection, self._upsert_checkpoint, params)

    def _insert_blobs_sql(self, rows: int) -> str:
        values = ", ".join([f"({_placeholders(len(BLOB_COLUMNS))})"] * rows)
        return f"INSERT INTO {self.blobs} ({self._columns(BLOB_COLUMNS)}) VALUES {values} ON CONFLICT DO NOTHING"

    def store_writes(self, rows: Sequence[tuple], replace: bool) -> None:
        """Insert writes; a repeated (task_id, idx) is ignored, or replaces the stored one if `replace`."""
        connection = connections[self.using]
        for chunk in batches(rows, BATCH // len(WRITE_COLUMNS)):
            sql = self._statement(
                ("writes", len(chunk), replace), functools.partial(self._insert_writes_sql, len(chunk), replace)
            )
            self._execute(connection, sql, [p for row in chunk for p in row])

    def _insert_writes_sql(self, rows: int, replace: bool) -> str:
        values = ", ".join([f"({_placeholders(len(WRITE_COLUMNS))})"] * rows)
        key = self._columns(("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"))
        update = ", ".join(f"{self.q(c)} = EXCLUDED.{self.q(c)}" for c in ("channel", "type", "blob"))
        action = f"DO UPDATE SET {update}" if replace else "DO NOTHING"
        return (
            f"INSERT INTO {self.writes} ({self._columns(WRITE_COLUMNS)}) VALUES {values} ON CONFLICT ({key}) {action}"
        )

    def copy_thread(self, source: str, target: str) -> None:
        with transaction.atomic(using=self.using):
            self._copy_rows(CheckpointBlob, source, target)
            self._copy_rows(Checkpoint, source, target)
            self._copy_rows(CheckpointWrite, source, target)

    def _copy_rows(self, model: type[_CheckpointModel], source: str, target: str) -> None:
        manager = model.objects.using(self.using)
        fields = [f.name for f in model._meta.concrete_fields if f.name not in ("id", "thread_id")]
        rows = manager.filter(thread_id=source).order_by("pk").values(*fields).iterator(chunk_size=BATCH)
        batch = []
        for values in rows:
            batch.append(model(thread_id=target, **values))
            if len(batch) == BATCH:
                manager.bulk_create(batch, ignore_conflicts=True)
                batch = []
        manager.bulk_create(batch, ignore_conflicts=True)

    # --- deletes -----------------------------------------------------------------------------------

    def delete_threads(self, thread_ids: Sequence[str]) -> None:
        with transaction.atomic(using=self.using):
            for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
                for chunk in batches(thread_ids):
                    model.objects.using(self.using).filter(thread_id__in=chunk).delete()

    def delete_for_runs(self, run_ids: Sequence[str], blob_keys: BlobKeys) -> None:
        with transaction.atomic(using=self.using):
            doomed: dict[tuple[str, str], list[tuple[str, str, Any]]] = defaultdict(list)
            rows = Checkpoint.objects.using(self.using).filter(run_id__in=run_ids)
            for thread_id, ns, *rest in rows.values_list(*CHECKPOINT_COLUMNS[:3], "type", "checkpoint"):
                doomed[(thread_id, ns)].append(tuple(rest))
            for (thread_id, ns), checkpoints in doomed.items():
                freed = set().union(*(blob_keys(type_, data) for _, type_, data in checkpoints))
                self._delete_checkpoints(thread_id, ns, [checkpoint_id for checkpoint_id, _, _ in checkpoints])
                self._collect_garbage(thread_id, ns, freed, blob_keys)

    def _delete_checkpoints(self, thread_id: str, ns: str, checkpoint_ids: Sequence[str]) -> None:
        """Delete checkpoints and their writes; a child of a deleted checkpoint loses its parent."""
        scope = {"thread_id": thread_id, "checkpoint_ns": ns}
        for chunk in batches(checkpoint_ids):
            CheckpointWrite.objects.using(self.using).filter(**scope, checkpoint_id__in=chunk).delete()
            Checkpoint.objects.using(self.using).filter(**scope, checkpoint_id__in=chunk).delete()
            orphans = Checkpoint.objects.using(self.using).filter(**scope, parent_checkpoint_id__in=chunk)
            orphans.update(parent_checkpoint_id=None)

    def _collect_garbage(self, thread_id: str, ns: str, freed: set[tuple[str, str]], blob_keys: BlobKeys) -> None:
        """Delete the freed blobs that no remaining checkpoint of the namespace uses."""
        remaining = Checkpoint.objects.using(self.using).filter(thread_id=thread_id, checkpoint_ns=ns)
        for type_, data in remaining.values_list("type", "checkpoint").iterator(chunk_size=BATCH) if freed else ():
            freed -= blob_keys(type_, data)
        by_channel: dict[str, list[str]] = defaultdict(list)
        for channel, version in freed:
            by_channel[channel].append(version)
        blobs = CheckpointBlob.objects.using(self.using).filter(thread_id=thread_id, checkpoint_ns=ns)
        for channel, versions in by_channel.items():
            for chunk in batches(versions):
                blobs.filter(channel=channel, version__in=chunk).delete()

    # --- pruning -----------------------------------------------------------------------------------

    def refuse_delta_threads(self, thread_ids: Sequence[str]) -> None:
        marked = functools.reduce(operator.or_, (Q(metadata__has_key=key) for key in DELTA_MARKERS))
        rows = Checkpoint.objects.using(self.using).filter(marked, thread_id__in=thread_ids)
        if delta := sorted(set(rows.values_list("thread_id", flat=True))):
            raise NotImplementedError(f"keep_latest can't prune threads that use a DeltaChannel: {', '.join(delta)}")

    def keep_latest(self, thread_id: str, blob_keys: BlobKeys) -> None:
        """Keep each namespace's latest checkpoint (with its writes and blobs); drop finished calls."""
        connection = connections[self.using]
        snapshot = connection.vendor == "postgresql" and not connection.in_atomic_block
        with transaction.atomic(using=self.using):
            if snapshot:
                # One snapshot for the whole prune: what a run saves meanwhile is neither seen nor
                # deleted. (On SQLite the write transaction shuts other writers out anyway.)
                self._execute(connection, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", [])
            self.refuse_delta_threads([thread_id])
            rows = Checkpoint.objects.using(self.using).filter(thread_id=thread_id)
            heads = dict(
                rows.values("checkpoint_ns").annotate(head=Max("checkpoint_id")).values_list("checkpoint_ns", "head")
            )
            kept = {
                ns: rows.filter(checkpoint_ns=ns, checkpoint_id=head).values_list("type", "checkpoint", "metadata")[0]
                for ns, head in heads.items()
            }
            for ns in self._finished_calls(rows, heads, kept):
                for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
                    model.objects.using(self.using).filter(thread_id=thread_id, checkpoint_ns=ns).delete()
                del heads[ns]
            for ns, head in heads.items():
                if older := list(
                    rows.filter(checkpoint_ns=ns).exclude(checkpoint_id=head).values_list("checkpoint_id", flat=True)
                ):
                    self._delete_checkpoints(thread_id, ns, older)
                    self._keep_only_blobs(thread_id, ns, blob_keys(*kept[ns][:2]))

    def _keep_only_blobs(self, thread_id: str, ns: str, keys: set[tuple[str, str]]) -> None:
        blobs = CheckpointBlob.objects.using(self.using).filter(thread_id=thread_id, checkpoint_ns=ns)
        if keys:
            blobs = blobs.exclude(functools.reduce(operator.or_, (Q(channel=c, version=v) for c, v in keys)))
        blobs.delete()

    @staticmethod
    def _finished_calls(rows, heads: dict[str, str], kept: dict[str, tuple]) -> list[str]:
        """Subgraph-call namespaces whose root checkpoint is saved but is not the kept root head.

        A call's namespace has its task id after a ":" (a `checkpointer=True` subgraph's has not, and
        its state outlives each call). Runs save in the background, so a call can be committed
        before its root checkpoint is; such a call stays.
        """
        roots = {ns: (meta or {}).get("parents", {}).get("") for ns, (_, _, meta) in kept.items() if ":" in ns}
        candidates = {root for root in roots.values() if root and root != heads.get("")}
        saved = set(rows.filter(checkpoint_ns="", checkpoint_id__in=candidates).values_list("checkpoint_id", flat=True))
        return [ns for ns, root in roots.items() if root in saved]

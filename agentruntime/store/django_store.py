"""The LangGraph store of the chat and of the Agent Server API: items in our own database, through Django.

`DjangoStore` is a `langgraph.store.base.BaseStore` on the StoreItem table (agentruntime/models.py), so the same code
runs on SQLite and PostgreSQL and every server process sees the same items. It behaves as LangGraph's `InMemoryStore`
and `PostgresStore` do (tests/agentruntime/test_store_contract.py runs their contract against all three):

- a batch answers its reads (get, search, list_namespaces) first and applies its writes after them, the last write of
  an item winning; a put keeps the item's `created_at` and moves `updated_at`;
- search lists a namespace prefix's items most recently updated first; a filter matches key by key, a plain value
  (or `$eq`, `$ne`) by JSON equality, `$gt`, `$gte`, `$lt`, `$lte` numerically, or as strings when both
  sides are strings (anything else does not match, where InMemoryStore raises);
- list_namespaces sorts the namespaces that hold items (as PostgresStore; InMemoryStore keeps listing an emptied
  one), after prefix and suffix conditions (`"*"` matches any label) and `max_depth`;
- a namespace and key over MAX_ADDRESS_BYTES together are refused (AddressTooLong) on both databases, where
  PostgreSQL alone would fail to index them.

- with an `index` (langgraph.json's store.index, agentruntime/store/config.py), a put embeds the item's fields and a
search
  with a `query` ranks by cosine similarity, exactly (agentruntime/store/vectors.py), with a `score`; items without a
  vector (`index=False`) follow the scored ones, most recently updated first, as in InMemoryStore;
- with TTLs (a put's `ttl`, store.ttl's `default_ttl`), an item is invisible from its `expires_at` on and the
  periodic sweep deletes it (agentruntime/jobs.py); a get or search with `refresh_ttl` moves it on, as in PostgresStore.

A run's graph gets its thread owner's store (agentruntime/runs/execution.py), as the `store` argument, `get_store()` and
`runtime.store`; the Agent Server API's /store routes use the caller's (agentserver/api_store.py).
Each store has a `scope` and sees only its items. Sync methods use the calling thread's connection (and transaction),
except on an event loop's thread, where Django allows no query; async ones run the same code on the chat's database
threads (agentruntime/db_executor.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Substr
from django.utils import timezone
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
)
from langgraph.store.base.embed import EmbeddingsLambda

from agentruntime import db_executor
from agentruntime.models import StoreItem, StoreVector
from agentruntime.store import hot_paths as store_sql
from agentruntime.store import vectors as store_vectors
from agentruntime.store.hot_paths import Row
from agentruntime.store.search_filters import SCAN_CHUNK, check_filter, does_match, leading_literal, matches, narrowed
from core.deadlines import minutes_after

# A namespace and key are indexed together (with the scope), and PostgreSQL refuses an index row over 2704 bytes.
MAX_ADDRESS_BYTES = 2048

Address = tuple[tuple[str, ...], str]
T = TypeVar("T")


class AddressTooLong(ValueError):
    """An item's namespace and key are too long to index, on either database."""


def namespace_text(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def namespace_tuple(text: str) -> tuple[str, ...]:
    return tuple(text.split(".")) if text else ()


class Embedded:
    """What a batch's puts and queries embed to, computed before its transaction (embedding is slow I/O)."""

    def __init__(self) -> None:
        self.queries: dict[str, Any] = {}
        self.vectors: dict[Address, list[tuple[str, bytes]]] = {}


class DjangoStore(BaseStore):
    """A LangGraph store on Django's database (SQLite and PostgreSQL), holding the items of one scope.

    Args:
        scope: Which store this is: items of other scopes are invisible to it.
        using: The Django database alias.
        index: LangGraph's IndexConfig (`dims`, `embed`, `fields`): semantic search. None: `query` is ignored.
        ttl: LangGraph's TTLConfig (`default_ttl` minutes, `refresh_on_read`).
    """

    supports_ttl = True

    def __init__(self, *, scope: str, using: str = "default", index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None):
        self.scope = scope
        self.using = using
        self.index_config = dict(index) if index else None
        self.embeddings = ensure_embeddings(index["embed"]) if index else None
        self.dims = int(index["dims"]) if index else 0
        self.fields = store_vectors.tokenized_fields(index.get("fields")) if index else []
        self.ttl_config = ttl

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute get, search, list_namespaces and put operations, in one transaction when it writes.

        Called on an event loop's thread (a sync call in an async node), it runs on a chat database thread and
        blocks the loop meanwhile, as InMemoryStore's and PostgresStore's sync methods do there.

        Args:
            ops: The operations.

        Returns:
            One result per operation, in order: an Item or None, a list of SearchItems, a list of namespaces, None.
        """
        ops = list(ops)
        embedded = self._embed(ops)
        if _on_event_loop():
            return db_executor.run_blocking(self._batch, ops, embedded)
        return self._batch(ops, embedded)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` on a chat database thread, its embeddings awaited first."""
        ops = list(ops)
        embedded = await self._aembed(ops)
        return await db_executor.run(self._batch, ops, embedded)

    # --- embedding ---------------------------------------------------------------------------------

    def _to_embed(self, ops: list[Op]) -> tuple[list[str], list[tuple[Address, str, str]]]:
        if self.embeddings is None:
            return [], []
        queries = list(dict.fromkeys(op.query for op in ops if isinstance(op, SearchOp) and op.query))
        last_puts = {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}
        texts = [(address, field, text) for address, op in last_puts.items()
                 for field, text in store_vectors.texts_to_embed(op, self.fields)]
        return queries, texts

    def _embed(self, ops: list[Op]) -> Embedded:
        queries, texts = self._to_embed(ops)
        embedded = Embedded()
        if self.embeddings is None or not (queries or texts):
            return embedded
        if _async_only(self.embeddings):
            # The project's embedding function is async (`aembed_texts`) and the caller sync (a sync node, the
            # /store views): await it on a loop of its own, as the Agent Server's async routes would.
            return _run_coroutine(self._aembed(ops))
        distinct = list(dict.fromkeys(text for _, _, text in texts))
        vectors = self.embeddings.embed_documents(distinct) if distinct else []
        query_vectors = [self.embeddings.embed_query(query) for query in queries]
        return self._embedded(queries, query_vectors, texts, distinct, vectors)

    async def _aembed(self, ops: list[Op]) -> Embedded:
        queries, texts = self._to_embed(ops)
        if self.embeddings is None:
            return Embedded()
        distinct = list(dict.fromkeys(text for _, _, text in texts))
        vectors = await self.embeddings.aembed_documents(distinct) if distinct else []
        query_vectors = await asyncio.gather(*(self.embeddings.aembed_query(query) for query in queries))
        return self._embedded(queries, list(query_vectors), texts, distinct, vectors)

    def _embedded(self, queries: list[str], query_vectors: list[list[float]], texts: list[tuple[Address, str, str]],
                  distinct: list[str], vectors: list[list[float]]) -> Embedded:
        if len(vectors) != len(distinct):
            raise ValueError(f"The embedding function returned {len(vectors)} vectors for {len(distinct)} texts.")
        embedded = Embedded()
        embedded.queries = {query: store_vectors.query_vector(vector, self.dims)
                            for query, vector in zip(queries, query_vectors, strict=True)}
        by_text = {text: store_vectors.to_bytes(vector, self.dims) for text, vector in zip(distinct, vectors,
                                                                                            strict=True)}
        for address, field, text in texts:
            embedded.vectors.setdefault(address, []).append((field, by_text[text]))
        return embedded

    # --- the batch ---------------------------------------------------------------------------------

    def _batch(self, ops: list[Op], embedded: Embedded) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        puts: dict[Address, PutOp] = {}
        now = timezone.now()
        # Reads alone need no transaction: each is one query, and BEGIN and COMMIT would double the round trips.
        writes = any(isinstance(op, PutOp) for op in ops)
        with transaction.atomic(using=self.using) if writes else contextlib.nullcontext():
            gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
            for i, item in zip([i for i, _ in gets], self._get_many([op for _, op in gets], now), strict=True):
                results[i] = item
            for i, op in enumerate(ops):
                if isinstance(op, SearchOp):
                    results[i] = self._search(op, now, embedded)
                elif isinstance(op, ListNamespacesOp):
                    results[i] = self._list_namespaces(op, now)
                elif isinstance(op, PutOp):
                    puts[(op.namespace, op.key)] = op
                elif not isinstance(op, GetOp):
                    raise ValueError(f"Unknown operation type: {type(op)}")
            self._apply_puts(list(puts.values()), now, embedded)
        return results

    # --- reads -------------------------------------------------------------------------------------

    def _items(self, now: datetime) -> QuerySet[StoreItem]:
        # An expired item is invisible at once, whether or not the sweep has deleted it yet.
        return (StoreItem.objects.using(self.using).filter(scope=self.scope)
                .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now)))

    def _get_many(self, ops: list[GetOp], now: datetime) -> list[Item | None]:
        if not ops:
            return []
        keys_by_namespace: dict[str, set[str]] = defaultdict(set)
        for op in ops:
            keys_by_namespace[namespace_text(op.namespace)].add(op.key)
        found = {(row.namespace, row.key): row for row in store_sql.select_addresses(
            using=self.using, scope=self.scope, now=now, keys_by_namespace=keys_by_namespace)}
        rows = [found.get((namespace_text(op.namespace), op.key)) for op in ops]
        self._refresh([row for row, op in zip(rows, ops, strict=True) if row is not None and op.refresh_ttl], now)
        return [_item(row) if row is not None else None for row in rows]

    def _in_prefix(self, op: SearchOp, now: datetime) -> QuerySet[StoreItem]:
        rows = self._items(now)
        if op.namespace_prefix:
            rows = _under(rows, namespace_text(op.namespace_prefix))
        return narrowed(rows, op.filter) if op.filter else rows

    def _search(self, op: SearchOp, now: datetime, embedded: Embedded) -> list[SearchItem]:
        if op.filter:
            check_filter(op.filter)
        found: list[tuple[Row | StoreItem, float | None]]
        if op.query and op.query in embedded.queries:
            found = self._ranked(op, self._in_prefix(op, now), embedded.queries[op.query])
        else:
            def window(start: int, size: int) -> list[Row]:
                return store_sql.select_page(using=self.using, scope=self.scope, now=now, filter=op.filter,
                                             prefix=namespace_text(op.namespace_prefix), start=start, size=size)

            found = [(row, None) for row in _filtered_page(window, op.filter, op.offset, op.limit)]
        if op.refresh_ttl:
            self._refresh([row for row, _ in found], now)
        return [_search_item(row, score) for row, score in found]

    def _ranked(self, op: SearchOp, rows: QuerySet[StoreItem],
                query: Any) -> list[tuple[Row | StoreItem, float | None]]:
        # The items with vectors by score, then those without (put with index=False) by recency, as InMemoryStore.
        vectors = (StoreVector.objects.using(self.using).filter(item__in=rows.values("id"))
                   .order_by("item_id", "id"))
        candidates: Iterator[tuple[int, Any]]
        if op.filter:
            candidates = _matching_vectors(vectors.values_list("item_id", "vector", "item__value"), op.filter)
        else:
            candidates = vectors.values_list("item_id", "vector").iterator(chunk_size=store_vectors.SCORE_BATCH)
        ranked, scored = store_vectors.rank(candidates, query, keep=op.offset + op.limit)
        by_id = StoreItem.objects.using(self.using).in_bulk([r.item_id for r in ranked[op.offset:]])
        found: list[tuple[Row | StoreItem, float | None]] = [(by_id[r.item_id], r.score)
                                                             for r in ranked[op.offset:]]
        if len(found) < op.limit:
            unscored = rows.filter(~Exists(StoreVector.objects.filter(item=OuterRef("pk")))).order_by(
                "-updated_at", "-id")
            found += [(row, None) for row in _filtered_page(lambda start, size: list(unscored[start: start + size]),
                                                            op.filter, max(0, op.offset - scored),
                                                            op.limit - len(found))]
        return found

    def _list_namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        rows = self._items(now)
        for condition in op.match_conditions or ():
            literal = leading_literal(condition)
            if literal:
                rows = _under(rows, namespace_text(literal))
        namespaces = [namespace_tuple(text) for text in rows.values_list("namespace", flat=True).distinct()]
        namespaces = [ns for ns in namespaces if all(does_match(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset: op.offset + op.limit]

    def _refresh(self, rows: Sequence[Row | StoreItem], now: datetime) -> None:
        # refresh_ttl: an item with a TTL lives its TTL again from this read on.
        by_ttl: dict[float, list[int]] = defaultdict(list)
        for row in rows:
            if row.ttl_minutes is not None:
                by_ttl[row.ttl_minutes].append(row.pk)
        for minutes, ids in by_ttl.items():
            StoreItem.objects.using(self.using).filter(pk__in=ids).update(expires_at=minutes_after(now, minutes))

    # --- writes ------------------------------------------------------------------------------------

    def _apply_puts(self, ops: list[PutOp], now: datetime, embedded: Embedded) -> None:
        for op in ops:
            if op.value is not None and len(namespace_text(op.namespace).encode()) + len(op.key.encode()) > \
                    MAX_ADDRESS_BYTES:
                raise AddressTooLong(f"The namespace and key together must be at most {MAX_ADDRESS_BYTES} bytes "
                                     "(UTF-8).")
        deletes: dict[str, list[str]] = defaultdict(list)
        for op in ops:
            if op.value is None:
                deletes[namespace_text(op.namespace)].append(op.key)
        for namespace, keys in deletes.items():
            StoreItem.objects.using(self.using).filter(scope=self.scope, namespace=namespace, key__in=keys).delete()
        writes = [op for op in ops if op.value is not None]
        if not writes:
            return
        ids = store_sql.upsert(using=self.using, scope=self.scope, now=now, items=[
            (namespace_text(op.namespace), op.key, dict(op.value or {}), op.ttl) for op in writes])
        if self.embeddings is not None:
            self._replace_vectors(writes, ids, embedded)

    def _replace_vectors(self, ops: list[PutOp], ids: dict[tuple[str, str], int], embedded: Embedded) -> None:
        item_ids = [ids[(namespace_text(op.namespace), op.key)] for op in ops]
        StoreVector.objects.using(self.using).filter(item_id__in=item_ids).delete()
        StoreVector.objects.using(self.using).bulk_create(
            [StoreVector(item_id=item_id, field=field, vector=vector)
             for op, item_id in zip(ops, item_ids, strict=True)
             for field, vector in embedded.vectors.get((op.namespace, op.key), [])],
            batch_size=500)


def _async_only(embeddings: Embeddings) -> bool:
    return isinstance(embeddings, EmbeddingsLambda) and getattr(embeddings, "func", None) is None


def _run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    if not _on_event_loop():
        return asyncio.run(coroutine)
    # asyncio.run refuses to run inside a running loop: on a loop's thread, a thread of its own runs it.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-embed") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _under(rows: QuerySet[StoreItem], prefix: str) -> QuerySet[StoreItem]:
    # A namespace equal to the prefix or under it; compared exactly (SQLite's LIKE ignores case), as store_sql does.
    head = f"{prefix}."
    return rows.alias(namespace_head=Substr("namespace", 1, len(head))).filter(
        Q(namespace=prefix) | Q(namespace_head=head))


def _filtered_page(window: Callable[[int, int], Sequence[Row | StoreItem]], filter: dict[str, Any] | None,
                   offset: int, limit: int) -> list[Row | StoreItem]:
    """A page of the rows `window(start, size)` reads in order, the filter applied in Python
    (agentruntime/store/search_filters.py) to windows: the first as large as the page, the next ones larger, so a
    selective filter reads little more than the page and memory stays bounded by a window."""
    if not filter:
        return list(window(offset, limit))
    found: list[Row | StoreItem] = []
    start, size, matched = 0, offset + limit, 0
    while True:
        rows = window(start, size)
        for row in rows:
            if matches(row.value, filter):
                if matched >= offset:
                    found.append(row)
                matched += 1
                if len(found) == limit:
                    return found
        if len(rows) < size:
            return found
        start, size = start + size, max(size, min(size * 4, SCAN_CHUNK))


def _matching_vectors(rows: QuerySet, filter: dict[str, Any]) -> Iterator[tuple[int, bytes]]:
    verdicts: dict[int, bool] = {}
    for item_id, vector, value in rows.iterator(chunk_size=store_vectors.SCORE_BATCH):
        if item_id not in verdicts:
            verdicts.clear()  # rows come by item: only the current item's verdict is needed
            verdicts[item_id] = matches(value, filter)
        if verdicts[item_id]:
            yield item_id, vector


def _item(row: Row | StoreItem) -> Item:
    return Item(value=row.value, key=row.key, namespace=namespace_tuple(row.namespace),
                created_at=row.created_at, updated_at=row.updated_at)


def _search_item(row: Row | StoreItem, score: float | None = None) -> SearchItem:
    return SearchItem(namespace=namespace_tuple(row.namespace), key=row.key, value=row.value,
                      created_at=row.created_at, updated_at=row.updated_at, score=score)

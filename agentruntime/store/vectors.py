"""Semantic search of DjangoStore (store.index): which texts of an item are embedded, how a vector is kept, and the
exact ranking of a search with a `query`.

The texts are LangGraph's: the index's `fields` (default `["$"]`, the whole value as JSON) or a put's own `index`
list, each path through `get_text_at_path`, a path that yields several texts naming them `path.0`, `path.1`, ... (as
InMemoryStore and PostgresStore do). A vector is stored as float32 bytes (StoreVector.vector). A search reads the
candidates' vectors in batches ordered by item, scores each batch with numpy (cosine similarity, in float64), keeps an
item's best field (max pooling) and only the best `offset + limit` items in a heap: memory stays bounded by the batch
and the page, whatever the store holds, and the ranking is exact and the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from langgraph.store.base import PutOp
from langgraph.store.base.embed import get_text_at_path, tokenize_path

if TYPE_CHECKING:
    import numpy as np


@cache
def _numpy() -> ModuleType:
    """numpy, imported by the first vector operation: it adds about 16 MiB to a process, and only stores with an
    index (store.index) use it, so the web and worker processes of a service without one never load it."""
    import numpy

    return numpy

# Vectors scored per batch: 2,000 vectors of 1,536 dimensions are 12 MiB of float32.
SCORE_BATCH = 2000


@dataclass(frozen=True)
class Ranked:
    item_id: int
    score: float


def tokenized_fields(fields: Sequence[str] | None) -> list[tuple[str, str | list[str]]]:
    """The index's fields as (path, tokens) pairs; no fields means the whole value (`$`, kept as is: it is the
    whole value only untokenized, as InMemoryStore passes it)."""
    return [(path, path if path == "$" else tokenize_path(path)) for path in (fields or ["$"])]


def texts_to_embed(op: PutOp, default_fields: list[tuple[str, str | list[str]]]) -> list[tuple[str, str]]:
    """The (field, text) pairs a put embeds: none for a delete or `index=False`, the put's own paths if it gives
    them, else the index's fields."""
    if op.value is None or op.index is False:
        return []
    paths = default_fields if op.index is None else tokenized_fields(op.index)
    found: list[tuple[str, str]] = []
    for path, tokens in paths:
        texts = get_text_at_path(op.value, tokens)
        if len(texts) == 1:
            found.append((path, texts[0]))
        else:
            found.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
    return found


def to_bytes(vector: Sequence[float], dims: int) -> bytes:
    if len(vector) != dims:
        raise ValueError(f"The embedding function returned {len(vector)} dimensions; store.index.dims is {dims}.")
    return _numpy().asarray(vector, dtype="<f4").tobytes()


def query_vector(vector: Sequence[float], dims: int) -> np.ndarray:
    """A query's embedding as the unit float64 vector the stored ones are scored against."""
    np = _numpy()
    array = np.frombuffer(to_bytes(vector, dims), dtype="<f4").astype(np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


def cosine_scores(query: np.ndarray, blobs: Sequence[bytes]) -> np.ndarray:
    """The cosine similarity of each stored vector with the unit `query`; 0 for a zero vector."""
    np = _numpy()
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), query.shape[0]).astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    dots = matrix @ query
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def rank(rows: Iterable[tuple[int, bytes | memoryview]], query: np.ndarray, *, keep: int) -> tuple[list[Ranked], int]:
    """The best `keep` items of `rows` ((item_id, vector) ordered by item_id), by their best field's score, ties
    going to the older item (the smaller id); and how many items were scored in all."""
    heap: list[tuple[float, int]] = []  # (score, -item_id): the worst kept item first
    scored = 0
    for item_id, score in _pooled(_scored(rows, query)):
        scored += 1
        entry = (score, -item_id)
        if len(heap) < keep:
            heapq.heappush(heap, entry)
        elif keep and entry > heap[0]:
            heapq.heapreplace(heap, entry)
    best = sorted(heap, reverse=True)
    return [Ranked(item_id=-negative_id, score=score) for score, negative_id in best], scored


def _scored(rows: Iterable[tuple[int, bytes | memoryview]], query: np.ndarray) -> Iterator[tuple[int, float]]:
    batch_ids: list[int] = []
    batch_blobs: list[bytes] = []
    for item_id, blob in rows:
        batch_ids.append(item_id)
        batch_blobs.append(bytes(blob))
        if len(batch_ids) >= SCORE_BATCH:
            yield from zip(batch_ids, cosine_scores(query, batch_blobs).tolist(), strict=True)
            batch_ids, batch_blobs = [], []
    if batch_ids:
        yield from zip(batch_ids, cosine_scores(query, batch_blobs).tolist(), strict=True)


def _pooled(scores: Iterable[tuple[int, float]]) -> Iterator[tuple[int, float]]:
    # Rows come ordered by item: an item's fields are consecutive, so its best score is known when the next begins.
    current: int | None = None
    best = 0.0
    for item_id, score in scores:
        if item_id != current:
            if current is not None:
                yield current, best
            current, best = item_id, score
        else:
            best = max(best, score)
    if current is not None:
        yield current, best


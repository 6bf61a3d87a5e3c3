"""Semantic search of the store (store.index), as LangGraph's own store tests check it for InMemoryStore and
PostgresStore (their vector tests: auto-embedding, updates, filters, pagination, per-put fields, index=False, scores),
run against our DjangoStore and InMemoryStore alike, with a deterministic embedding function. Every ranking is
checked against the exact cosine similarity computed here, so the SQLite and PostgreSQL passes give the same results.
"""

from __future__ import annotations

import asyncio

import pytest
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.base.embed import get_text_at_path
from langgraph.store.memory import InMemoryStore

from agentruntime import db_executor
from agentruntime.models import StoreItem, StoreVector
from agentruntime.store import vectors as store_vectors
from agentruntime.store.django_store import DjangoStore
from tests.agentruntime.store_embedding import DIMS, aembed_texts, cosine, embed, embed_texts

pytestmark = pytest.mark.django_db(transaction=True)

DOCS = {
    "apple": {"text": "red apple pie", "color": "red", "rating": 4.5},
    "car": {"text": "a fast red car", "color": "red", "rating": 3.0},
    "green": {"text": "green apple tree", "color": "green", "rating": 4.0},
    "sky": {"text": "blue sky at noon", "color": "blue", "rating": 3.5},
    "zebra": {"text": "zany zebra xerxes", "color": "white", "rating": 1.0},
}


def index_config(embed_function=embed_texts, fields=("text",)) -> dict:
    return {"dims": DIMS, "embed": embed_function, "fields": list(fields)}


@pytest.fixture(params=["django", "memory"])
def store(request):
    if request.param == "memory":
        yield InMemoryStore(index=index_config())
        return
    yield DjangoStore(scope="test", index=index_config())
    db_executor.close_connections()


@pytest.fixture
def django_store():
    yield DjangoStore(scope="test", index=index_config())
    db_executor.close_connections()


def exact_ranking(docs: dict[str, dict], query: str, fields=("text",)) -> list[tuple[str, float]]:
    """Each document's best field's cosine similarity with the query, best first."""
    query_vector = embed(query)
    scores = {}
    for key, value in docs.items():
        texts = [text for field in fields for text in get_text_at_path(value, field)]
        scores[key] = max(cosine(query_vector, embed(text)) for text in texts)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def put_all(store, docs: dict[str, dict], namespace=("docs",)) -> None:
    for key, value in docs.items():
        store.put(namespace, key, value)


def ranked(results) -> list[tuple[str, float]]:
    return [(item.key, item.score) for item in results]


def assert_ranking(results, expected) -> None:
    assert [key for key, _ in ranked(results)] == [key for key, _ in expected]
    for (_, score), (_, want) in zip(ranked(results), expected, strict=True):
        assert score == pytest.approx(want, abs=1e-5)


@pytest.mark.parametrize("query", ["apple", "red car", "zebra", "blue noon", "xyz!@#"])
def test_a_query_ranks_every_item_by_exact_cosine_similarity(store, query):
    put_all(store, DOCS)

    assert_ranking(store.search(("docs",), query=query, limit=10), exact_ranking(DOCS, query))


def test_a_search_without_a_query_lists_without_scores(store):
    put_all(store, DOCS)

    found = store.search(("docs",), limit=10)

    assert sorted(item.key for item in found) == sorted(DOCS)
    assert all(item.score is None for item in found)


def test_an_update_re_embeds_the_item(store):
    put_all(store, DOCS)
    before = {key: score for key, score in ranked(store.search(("docs",), query="zany zebra", limit=10))}

    store.put(("docs",), "zebra", {"text": "a sleepy dog", "color": "brown", "rating": 2.0})

    after = {key: score for key, score in ranked(store.search(("docs",), query="zany zebra", limit=10))}
    assert after["zebra"] < before["zebra"]
    docs = {**DOCS, "zebra": {"text": "a sleepy dog"}}
    assert_ranking(store.search(("docs",), query="zany zebra", limit=10), exact_ranking(docs, "zany zebra"))


def test_filters_narrow_a_ranked_search(store):
    put_all(store, DOCS)

    red = store.search(("docs",), query="apple", filter={"color": "red"}, limit=10)
    rated = store.search(("docs",), query="sky", filter={"rating": {"$gt": 3.2}}, limit=10)

    assert_ranking(red, exact_ranking({k: v for k, v in DOCS.items() if v["color"] == "red"}, "apple"))
    assert_ranking(rated, exact_ranking({k: v for k, v in DOCS.items() if v["rating"] > 3.2}, "sky"))


def test_pages_of_a_ranked_search_follow_each_other(store):
    put_all(store, DOCS)
    expected = exact_ranking(DOCS, "apple tree")

    pages = [store.search(("docs",), query="apple tree", limit=2, offset=offset) for offset in (0, 2, 4)]

    assert [key for page in pages for key, _ in ranked(page)] == [key for key, _ in expected]


def test_a_put_s_own_fields_override_the_index_s_and_an_item_takes_its_best_field(store):
    store.put(("docs",), "a", {"text": "nothing", "title": "aaa", "body": "bbb"}, index=["title", "body"])
    store.put(("docs",), "b", {"text": "nothing", "title": "ccc", "body": "ggg"}, index=["title", "body"])

    for query in ("aaa", "ggg", "bbb"):
        expected = exact_ranking({"a": {"f": ["aaa", "bbb"]}, "b": {"f": ["ccc", "ggg"]}}, query, fields=["f[*]"])
        assert_ranking(store.search(("docs",), query=query), expected)


def test_list_fields_embed_each_element(store):
    store.put(("docs",), "tags", {"tags": ["zebra", "apple"]}, index=["tags[*]"])
    store.put(("docs",), "other", {"tags": ["car", "sky"]}, index=["tags[*]"])

    expected = exact_ranking({"tags": {"tags": ["zebra", "apple"]}, "other": {"tags": ["car", "sky"]}}, "zebra",
                             fields=["tags[*]"])
    assert_ranking(store.search(("docs",), query="zebra"), expected)


def test_an_item_put_with_index_false_follows_the_scored_ones_without_a_score(store):
    put_all(store, {"apple": DOCS["apple"], "car": DOCS["car"]})
    store.put(("docs",), "plain", {"text": "apple apple apple"}, index=False)

    found = store.search(("docs",), query="apple", limit=10)

    assert [item.key for item in found] == [key for key, _ in exact_ranking(
        {"apple": DOCS["apple"], "car": DOCS["car"]}, "apple")] + ["plain"]
    assert found[-1].score is None


def test_the_whole_value_is_embedded_when_the_index_names_no_fields():
    store = DjangoStore(scope="test", index={"dims": DIMS, "embed": embed_texts})
    put_all(store, DOCS)

    assert_ranking(store.search(("docs",), query="green apple", limit=10),
                   exact_ranking(DOCS, "green apple", fields=["$"]))


def test_an_async_embedding_function_serves_the_async_methods(django_store):
    store = DjangoStore(scope="test", index=index_config(aembed_texts))

    async def scenario():
        await store.abatch([PutOp(("docs",), key, value) for key, value in DOCS.items()])
        return await store.asearch(("docs",), query="red car", limit=10)

    assert_ranking(asyncio.run(scenario()), exact_ranking(DOCS, "red car"))


def test_ranking_in_small_batches_is_exact_across_batch_boundaries(django_store, monkeypatch):
    monkeypatch.setattr(store_vectors, "SCORE_BATCH", 3)
    docs = {f"doc{i}": {"title": word, "text": f"{word} number {i}"} for i, word in
            enumerate(["apple", "zebra", "sky", "car", "tree", "noon", "pie", "dog", "red", "blue", "green"])}
    for key, value in docs.items():
        django_store.put(("docs",), key, value, index=["title", "text"])

    for offset in (0, 4):
        found = django_store.search(("docs",), query="apple tree", limit=4, offset=offset)
        assert_ranking(found, exact_ranking(docs, "apple tree", fields=["title", "text"])[offset: offset + 4])


def test_vectors_are_kept_as_float32_bytes_and_go_with_their_item(django_store):
    django_store.put(("docs",), "tags", {"tags": ["zebra", "apple"]}, index=["tags[*]"])

    assert [len(bytes(v)) for v in StoreVector.objects.values_list("vector", flat=True)] == [DIMS * 4, DIMS * 4]
    django_store.delete(("docs",), "tags")
    assert not StoreVector.objects.exists()


def test_a_batch_embeds_each_distinct_text_once(django_store):
    calls = []

    def counting(texts):
        calls.append(list(texts))
        return embed_texts(texts)

    store = DjangoStore(scope="test", index=index_config(counting))
    store.batch([PutOp(("docs",), "a", {"text": "same"}), PutOp(("docs",), "b", {"text": "same"}),
                 SearchOp(("docs",), query="same")])

    assert calls == [["same"], ["same"]]  # the documents, then the query
    assert StoreItem.objects.count() == 2 and StoreVector.objects.count() == 2


def test_an_embedding_of_the_wrong_length_is_refused(django_store):
    store = DjangoStore(scope="test", index={"dims": DIMS + 1, "embed": embed_texts, "fields": ["text"]})

    with pytest.raises(ValueError, match="dimensions"):
        store.put(("docs",), "a", {"text": "apple"})
    assert not StoreItem.objects.exists()


def test_a_query_is_ignored_by_a_store_without_an_index():
    store = DjangoStore(scope="test")
    put_all(store, DOCS)

    found = store.search(("docs",), query="apple", limit=10)

    assert [item.key for item in found] == list(reversed(DOCS))
    assert all(item.score is None for item in found)


def test_an_async_embedding_function_serves_the_sync_methods_too(django_store):
    store = DjangoStore(scope="test", index=index_config(aembed_texts))
    put_all(store, DOCS)

    assert_ranking(store.search(("docs",), query="red car", limit=10), exact_ranking(DOCS, "red car"))

    async def on_a_loop():
        return store.search(("docs",), query="apple", limit=10)

    assert_ranking(asyncio.run(on_a_loop()), exact_ranking(DOCS, "apple"))

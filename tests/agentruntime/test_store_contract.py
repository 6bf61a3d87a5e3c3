"""LangGraph's store contract (what InMemoryStore and PostgresStore are tested for, in langgraph's own test_store.py
files), restated here and run against our DjangoStore and against InMemoryStore in one parametrized test, so that a
pass on both shows the same behaviour. Semantic search is in test_store_semantic.py, TTLs in test_store_ttl.py.

The same file runs in the SQLite pass and in the PostgreSQL pass of CI.
"""

from __future__ import annotations

import asyncio

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from agentruntime import db_executor
from agentruntime.store.django_store import AddressTooLong, DjangoStore

# The async methods run on the chat's database threads: they only see committed data.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["django", "memory"])
def store(request):
    if request.param == "memory":
        yield InMemoryStore()
        return
    yield DjangoStore(scope="test")
    db_executor.close_connections()


@pytest.fixture
def django_store():
    yield DjangoStore(scope="test")
    db_executor.close_connections()


def test_a_batch_answers_each_operation_in_order_and_reads_before_it_writes(store):
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})

    results = store.batch([
        GetOp(("test", "foo"), "key1"),
        PutOp(("test",), "key3", {"data": "value3"}),
        SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(("test",), "key3"),
        SearchOp(("test",), filter=None, limit=10, offset=0),
    ])

    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert sorted(results[3]) == [("test", "bar"), ("test", "foo")]
    assert results[4] is None  # the batch's own put comes after its reads
    assert sorted(item.key for item in results[5]) == ["key1", "key2"]
    assert store.get(("test",), "key3").value == {"data": "value3"}


def test_gets_return_the_item_or_none(store):
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})

    results = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3"),
                           GetOp(("other",), "key1")])

    assert [r.key if r else None for r in results] == ["key1", "key2", None, None]
    assert results[0].namespace == ("test",)
    assert results[0].created_at.tzinfo is not None


def test_puts_store_and_a_none_value_deletes(store):
    results = store.batch([PutOp(("test",), "key1", {"data": "value1"}), PutOp(("test",), "key2", {"data": "v2"}),
                           PutOp(("test",), "key3", None)])
    assert results == [None, None, None]
    assert store.get(("test",), "key1").value == {"data": "value1"}
    assert store.get(("test",), "key3") is None

    store.batch([PutOp(("test",), "key1", None)])
    assert store.get(("test",), "key1") is None
    assert store.get(("test",), "key2").value == {"data": "v2"}


def test_the_last_put_of_an_item_in_a_batch_wins(store):
    store.batch([PutOp(("test",), "key", {"n": 1}), PutOp(("test",), "key", {"n": 2})])
    assert store.get(("test",), "key").value == {"n": 2}

    store.batch([PutOp(("test",), "key", {"n": 3}), PutOp(("test",), "key", None)])
    assert store.get(("test",), "key") is None


def test_an_update_replaces_the_value_and_moves_updated_at(store):
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert (item.namespace, item.key) == (namespace, "doc1")

    store.put(namespace, "doc1", {"title": "Updated Document"})
    updated = store.get(namespace, "doc1")

    assert updated.value == {"title": "Updated Document"}
    assert updated.updated_at > item.updated_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


def test_an_update_keeps_created_at_as_postgres_store_does(django_store):
    # InMemoryStore resets created_at on every put; PostgresStore keeps it, and so do we.
    django_store.put(("test",), "doc", {"n": 1})
    first = django_store.get(("test",), "doc")
    django_store.put(("test",), "doc", {"n": 2})
    assert django_store.get(("test",), "doc").created_at == first.created_at


def test_search_finds_a_namespace_prefix_filters_and_pages(store):
    data = [(("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
            (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
            (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
            (("testing",), "other", {"author": "Alice"})]
    for namespace, key, value in data:
        store.put(namespace, key, value)

    assert sorted(i.key for i in store.search(("test",))) == ["doc1", "doc2", "img1"]
    assert {i.namespace for i in store.search(("test", "docs"))} == {("test", "docs")}
    assert sorted(i.key for i in store.search(("test",), filter={"author": "Alice"})) == ["doc1", "img1"]
    assert [i.key for i in store.search(("test",), filter={"tags": ["draft"]})] == ["doc2"]
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    assert len(store.search((), limit=10)) == 4
    page = store.search(("test",), filter={"author": "Alice"}, limit=1, offset=1)
    assert len(page) == 1 and page[0].score is None


def test_batched_searches_answer_each_their_own(store):
    for namespace, key, tag in [(("test", "foo"), "key1", "a"), (("test", "bar"), "key2", "a"),
                                (("test", "baz"), "key3", "b")]:
        store.put(namespace, key, {"tag": tag})

    results = store.batch([SearchOp(("test",), filter={"tag": "a"}, limit=10, offset=0),
                           SearchOp(("test",), filter=None, limit=2, offset=0),
                           SearchOp(("test", "foo"), filter=None, limit=10, offset=0)])

    assert sorted(i.key for i in results[0]) == ["key1", "key2"]
    assert len(results[1]) == 2
    assert [(i.namespace, i.key) for i in results[2]] == [(("test", "foo"), "key1")]


def test_comparison_operators_compare_numbers_numerically(store):
    namespace = ("test", "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        store.put(namespace, key, {"score": score, "nested": {"score": score}})

    def scores(filter):
        return sorted(item.value["score"] for item in store.search(namespace, filter=filter))

    assert scores({"score": {"$gte": 10}}) == [10, 11]
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9, 9.5]
    assert scores({"score": {"$lte": 9}}) == [2, 9]
    assert scores({"score": {"$gt": 2, "$lt": 10}}) == [9, 9.5]
    assert scores({"score": {"$eq": 9}}) == [9]
    assert scores({"score": {"$ne": 9}}) == [2, 9.5, 10, 11]
    assert scores({"score": 10}) == [10]
    assert scores({"nested": {"score": 11}}) == [11]


def test_comparison_operators_compare_strings_as_strings_as_postgres_store_does(django_store):
    # PostgresStore's own test; InMemoryStore raises on it (float("apple")).
    for key, name in [("a", "apple"), ("b", "banana")]:
        django_store.put(("test", "names"), key, {"name": name})
    django_store.put(("test", "names"), "c", {"other": 1})

    found = django_store.search(("test", "names"), filter={"name": {"$gt": "apple"}})

    assert [item.value["name"] for item in found] == ["banana"]


def test_filter_keys_are_taken_literally_and_only_equal_values_match(store):
    store.put(("test",), "dotted", {"a.b": "x", 'q"uote': "y", "n": "1", "v": "é \" \\ ✓"})
    store.put(("test",), "nested", {"a": {"b": "x"}, 'q"uote': "z", "n": 1})
    store.put(("test",), "list", {"a.b": ["x"], "n": True, "café": "é", "back\\slash": "s", "": "e"})

    def keys(filter):
        return sorted(item.key for item in store.search(("test",), filter=filter))

    assert keys({"a.b": "x"}) == ["dotted"]
    assert keys({"a.b": {"$eq": "x"}}) == ["dotted"]
    assert keys({'q"uote': "y"}) == ["dotted"]
    assert keys({"a": {"b": "x"}}) == ["nested"]
    assert keys({"a.b": ["x"]}) == ["list"]
    assert keys({"n": "1"}) == ["dotted"]
    assert keys({"n": 1}) == ["list", "nested"]  # JSON true equals 1, as Python compares them
    assert keys({"missing": "x"}) == []
    assert keys({"v": "é \" \\ ✓"}) == ["dotted"]
    assert keys({"café": "é", "back\\slash": "s", "": "e"}) == ["list"]


def test_an_unknown_operator_is_refused(store):
    store.put(("test",), "a", {"n": 1})
    with pytest.raises(ValueError, match=r"\$foo"):
        store.search(("test",), filter={"n": {"$foo": 1}})


NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
              ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"), ("admin", "users", "789")]


@pytest.fixture
def namespaced(store):
    for i, namespace in enumerate(NAMESPACES):
        store.put(namespace, f"id_{i}", {"data": f"value_{i:02d}"})
    return store


def test_list_namespaces_by_prefix_suffix_and_wildcards(namespaced):
    store = namespaced
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                                        ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("users", "123", "x")) == []


def test_list_namespaces_truncates_to_max_depth_and_pages(namespaced):
    store = namespaced
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                     ("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(max_depth=0) == [()]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("f",)),), max_depth=2,
                                         limit=10, offset=0)]) == [[("a", "b"), ("a", "c"), ("b", "a")]]


def test_list_namespaces_pages_in_sorted_order(store):
    for i in reversed(range(20)):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})

    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=0) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)]


def test_an_empty_store_lists_no_namespaces(store):
    assert store.list_namespaces() == []


def test_a_namespace_whose_last_item_is_deleted_is_no_longer_listed_as_in_postgres_store(django_store):
    # InMemoryStore keeps listing an emptied namespace; PostgresStore lists only namespaces that hold items.
    django_store.put(("a",), "k", {"x": 1})
    django_store.put(("b",), "k", {"x": 1})
    django_store.delete(("a",), "k")
    assert django_store.list_namespaces() == [("b",)]


def test_invalid_namespaces_are_refused_by_put(store):
    doc = {"foo": "bar"}
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "foo", doc)

    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    # Past the public put, a batch takes the reserved root label.
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc


def test_the_async_methods_behave_as_the_sync_ones(store):
    async def scenario():
        await asyncio.gather(store.aput(("test",), "same", {"value": "same"}),
                             store.aput(("test",), "different", {"value": "different"}))
        got = await asyncio.gather(store.aget(("test",), "same"), store.aget(("test",), "different"),
                                   store.aget(("test",), "missing"))
        found = await store.asearch(("test",), filter={"value": "same"})
        namespaces = await store.alist_namespaces(prefix=("test",))
        with pytest.raises(InvalidNamespaceError):
            await store.aput((), "foo", {})
        await store.adelete(("test",), "same")
        return got, found, namespaces, await store.aget(("test",), "same")

    got, found, namespaces, deleted = asyncio.run(scenario())

    assert [g.value if g else None for g in got] == [{"value": "same"}, {"value": "different"}, None]
    assert [item.key for item in found] == ["same"]
    assert namespaces == [("test",)]
    assert deleted is None


def test_the_sync_methods_work_on_an_event_loops_thread_too(store):
    async def sync_calls_in_async_code():
        store.put(("test",), "key", {"n": 1})
        return store.get(("test",), "key"), store.search(("test",)), store.list_namespaces()

    item, found, namespaces = asyncio.run(sync_calls_in_async_code())

    assert item.value == {"n": 1} and [i.key for i in found] == ["key"] and namespaces == [("test",)]


def test_search_lists_the_most_recently_updated_first_as_postgres_store_does(django_store):
    # InMemoryStore lists in insertion order instead; the Agent Server documents "ordered by last updated time".
    for key in ["a", "b", "c"]:
        django_store.put(("test",), key, {"key": key})
    django_store.put(("test",), "a", {"key": "a", "again": True})

    assert [item.key for item in django_store.search(("test",))] == ["a", "c", "b"]


def test_a_namespace_and_key_too_long_to_index_are_refused_on_both_databases(django_store):
    with pytest.raises(AddressTooLong):
        django_store.put(("n",) * 10, "é" * 1100, {"v": 1})
    django_store.put(("n",), "é" * 1000, {"v": 1})

    assert django_store.get(("n",), "é" * 1000).value == {"v": 1}
    assert django_store.get(("n",) * 10, "é" * 1100) is None


def test_stores_of_different_scopes_do_not_see_each_others_items(django_store):
    other = DjangoStore(scope="other")
    django_store.put(("shared",), "key", {"owner": "test"})
    other.put(("shared",), "key", {"owner": "other"})
    other.put(("only", "other"), "key", {"owner": "other"})

    assert django_store.get(("shared",), "key").value == {"owner": "test"}
    assert [i.value for i in django_store.search(())] == [{"owner": "test"}]
    assert django_store.list_namespaces() == [("shared",)]
    django_store.delete(("shared",), "key")
    assert other.get(("shared",), "key").value == {"owner": "other"}


def test_number_filters_match_equal_numbers_and_json_booleans_as_python_compares_them(store):
    for key, n in (("zero", 0), ("false", False), ("float", 0.0), ("two", 2), ("text", "0")):
        store.put(("test",), key, {"n": n})

    def keys(filter):
        return sorted(item.key for item in store.search(("test",), filter=filter, limit=10))

    assert keys({"n": 0}) == ["false", "float", "zero"]
    assert keys({"n": {"$eq": 2.0}}) == ["two"]
    assert keys({"n": 0.5}) == []


def test_a_namespace_prefix_is_compared_exactly_on_both_databases(store):
    store.put(("users", "a"), "lower", {"v": 1})
    store.put(("Users", "a"), "upper", {"v": 2})
    store.put(("users_x",), "other", {"v": 3})

    assert [item.key for item in store.search(("Users",))] == ["upper"]
    assert [item.key for item in store.search(("users",), filter={"v": 1})] == ["lower"]
    assert store.list_namespaces(prefix=("users",)) == [("users", "a")]

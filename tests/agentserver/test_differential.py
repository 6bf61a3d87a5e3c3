"""One scripted scenario against LangChain's own Agent Server (`langgraph dev` 0.16.7, installed by
scripts/test-deps.d/40-langgraph-dev.sh) and against ours (`serve_graphs`, as a deployed revision runs it), compared
response by response once ids, timestamps and error messages are normalised (tests/agentserver/support_differential.py):
assistants and threads; every stream mode on every test graph, with and without subgraphs; the run operations; the
store; crons."""

from __future__ import annotations

import httpx
import pytest

from tests.agentserver import support_differential_runs as differential_runs
from tests.agentserver.support_differential import PEER, Step, new_id, peer_serving, play, play_apart
from tests.agentserver.support_differential_crons import cron_steps
from tests.agentserver.support_sdk import PROJECT
from tests.support_processes import BASE_DIR, graphs_served

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]
THREAD, OTHER, ASSISTANT = ("7d1f7c2e-0000-4000-8000-000000000001", "7d1f7c2e-0000-4000-8000-000000000002",
                            "7d1f7c2e-0000-4000-8000-000000000003")
NESTED = "0813419b-f0e6-579e-bdee-18d9fdf48632"  # uuid5 of "nested": the same on both servers
FAILED = "7d1f7c2e-0000-4000-8000-000000000004"  # a thread whose run raised
BROKEN = "7d1f7c2e-0000-4000-8000-000000000005"  # a thread whose run's input broke a reducer

SCENARIO = [
    ("POST", "/assistants/search", {"sort_by": "graph_id", "sort_order": "asc"}),
    ("POST", "/assistants/count", {}),
    ("GET", f"/assistants/{NESTED}", None),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT, "name": "helper",
                             "metadata": {"team": "a"}, "context": {"model": "m"}, "description": "first"}),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT}),
    ("POST", "/assistants", {"graph_id": "echo", "assistant_id": ASSISTANT, "if_exists": "do_nothing"}),
    ("POST", "/assistants", {"graph_id": "no-such-graph"}),
    ("PATCH", f"/assistants/{ASSISTANT}", {"metadata": {"stage": "two"}, "name": "helper 2"}),
    ("POST", f"/assistants/{ASSISTANT}/versions", {}),
    ("POST", f"/assistants/{ASSISTANT}/latest", {"version": 1}),
    ("POST", f"/assistants/{ASSISTANT}/latest", {"version": 9}),
    ("POST", "/assistants/search", {"metadata": {"team": "a"}, "select": ["assistant_id", "name", "version"]}),
    ("POST", "/assistants/search", {"name": "nest"}),
    ("POST", "/assistants/count", {"graph_id": "echo"}),
    ("GET", f"/assistants/{NESTED}/graph", None),
    ("GET", f"/assistants/{NESTED}/graph?xray=true", None),
    ("GET", f"/assistants/{NESTED}/schemas", None),
    ("GET", f"/assistants/{NESTED}/subgraphs", None),
    ("GET", f"/assistants/{NESTED}/subgraphs/child", None),
    ("DELETE", f"/assistants/{ASSISTANT}", None),
    ("DELETE", f"/assistants/{ASSISTANT}", None),
    ("POST", "/threads", {"thread_id": THREAD, "metadata": {"graph_id": "nested", "team": "a"}}),
    ("POST", "/threads", {"thread_id": THREAD}),
    ("POST", "/threads", {"thread_id": THREAD, "if_exists": "do_nothing"}),
    ("POST", "/threads", {"thread_id": "not-a-uuid"}),
    ("GET", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}/state", None),
    ("POST", f"/threads/{THREAD}/history", {}),
    ("PATCH", f"/threads/{THREAD}", {"metadata": {"stage": "two"}}),
    ("POST", f"/threads/{THREAD}/state", {"values": {"steps": ["a"]}, "as_node": "outer_step"}),
    ("POST", f"/threads/{THREAD}/state", {"values": {"steps": ["b"]}, "as_node": "nope"}),
    ("GET", f"/threads/{THREAD}/state", None),
    ("POST", f"/threads/{THREAD}/history", {"limit": 5}),
    ("GET", f"/threads/{THREAD}", None),
    ("POST", "/threads/search", {"metadata": {"team": "a"}}),
    ("POST", "/threads/search", {"ids": [THREAD], "select": ["thread_id", "status"]}),
    ("POST", "/threads/search", {"status": "bogus"}),
    ("POST", "/threads/count", {"metadata": {"team": "a"}}),
    ("GET", f"/threads/{OTHER}", None),
    ("DELETE", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}", None),
    ("GET", f"/threads/{THREAD}/state", None),
    # A run whose node raises (the slow graph sleeps for "x" seconds): the thread shows its error.
    ("POST", "/threads", {"thread_id": FAILED}),
    ("POST", f"/threads/{FAILED}/runs/wait", {"assistant_id": "slow", "input": {"delay": "x"}}),
    ("GET", f"/threads/{FAILED}", None),
]
# A run whose input the `messages` reducer (operator.add on a list) cannot apply: the run fails, the thread keeps the
# values it had before it.
BROKEN_INPUT = [
    ("POST", "/threads", {"thread_id": BROKEN}),
    ("POST", f"/threads/{BROKEN}/runs/wait", {"assistant_id": "echo", "input": {"messages": [{"content": "hi"}]}}),
    ("POST", f"/threads/{BROKEN}/runs/wait", {"assistant_id": "echo", "input": {"messages": "boom"}}),
    ("GET", f"/threads/{BROKEN}", None),
    ("POST", "/threads/search", {"ids": [BROKEN], "select": ["thread_id", "status", "values"]}),
    ("POST", f"/threads/{BROKEN}/history", {"limit": 3}),
]

# Items under a root of their own, so that listing namespaces sees only them: a put, an update, another put, gets,
# searches (listing order, filters, paging), namespace listings, deletes, and the errors both answer as JSON.
STORE_SCENARIO = [
    ("PUT", "/store/items", {"namespace": ["diff", "users", "u1"], "key": "prefs", "value": {"theme": "dark", "n": 3}}),
    ("PUT", "/store/items", {"namespace": ["diff", "users", "u2"], "key": "prefs", "value": {"theme": "dark", "n": 9}}),
    ("PUT", "/store/items", {"namespace": ["diff", "docs"], "key": "d1", "value": {"tags": ["a"], "n": 10},
                             "index": False, "ttl": None}),
    ("PUT", "/store/items", {"namespace": ["diff", "users", "u1"], "key": "prefs",
                             "value": {"theme": "light", "n": 4}}),
    ("GET", "/store/items?namespace=diff.users.u1&key=prefs", None),
    ("GET", "/store/items?namespace=diff.users.u1&key=missing", None),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff"]}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff", "users"], "filter": {"theme": "dark"}}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff"], "filter": {"n": {"$gte": 4, "$lt": 10}}}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff"], "filter": {"n": {"$ne": 4}, "tags": ["a"]}}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff", "users"], "limit": 1, "offset": 1}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff"], "query": "light"}),
    ("POST", "/store/items/search", {"namespace_prefix": ["diff", "nothing"]}),
    ("POST", "/store/namespaces", {"prefix": ["diff"]}),
    ("POST", "/store/namespaces", {"prefix": ["diff", "*", "u1"]}),
    ("POST", "/store/namespaces", {"prefix": ["diff"], "suffix": ["u2"]}),
    ("POST", "/store/namespaces", {"prefix": ["diff"], "max_depth": 2}),
    ("POST", "/store/namespaces", {"prefix": ["diff"], "limit": 1, "offset": 1}),
    ("PUT", "/store/items", {"namespace": [], "key": "k", "value": {}}),
    ("PUT", "/store/items", {"namespace": ["langgraph"], "key": "k", "value": {}}),
    ("PUT", "/store/items", {"namespace": ["diff"], "key": "k", "value": [1]}),
    ("DELETE", "/store/items", {"namespace": ["diff", "users", "u2"], "key": "prefs"}),
    ("DELETE", "/store/items", {"namespace": ["diff", "users", "u2"], "key": "prefs"}),
    ("GET", "/store/items?namespace=diff.users.u2&key=prefs", None),
]


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    """One `langgraph dev` for the module: its in-memory state carries over from test to test, so each test
    uses threads of its own."""
    if not PEER.exists():
        pytest.skip("langgraph dev is not installed: run scripts/test-deps.d/40-langgraph-dev.sh")
    with peer_serving(BASE_DIR / PROJECT, tmp_path_factory.mktemp("peer")) as url:
        yield url


@pytest.fixture
def ours(transactional_db, tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
           "CHAT_TRACING_PROJECT": ""}
    with graphs_served(BASE_DIR / PROJECT / "langgraph.json", env=env, log_path=tmp_path / "ours.log") as url:
        yield url


def assert_same(scenario: list[Step], theirs: list[tuple], mine: list[tuple]) -> None:
    for step, expected, found in zip(scenario, theirs, mine, strict=True):
        assert found == expected, f"{step.method} {step.path} {step.body}"


def test_assistants_and_threads_answer_like_langgraph_dev(peer, ours):
    scenario = [Step(method, path, body) for method, path, body in SCENARIO]
    assert_same(scenario, play(peer, scenario), play(ours, scenario))


def items_in_key_order(answers: list[tuple]) -> list[tuple]:
    """Search answers with their items sorted: the order is the one difference kept (the next test)."""
    return [(*answer[:4], {"items": sorted(answer[4]["items"], key=lambda i: (i["namespace"], i["key"]))})
            if isinstance(answer[4], dict) and "items" in answer[4] else answer for answer in answers]


def test_the_store_answers_like_langgraph_dev(peer, ours):
    scenario = [Step(method, path, body) for method, path, body in STORE_SCENARIO]
    assert_same(scenario, items_in_key_order(play(peer, scenario)), items_in_key_order(play(ours, scenario)))


def test_the_store_lists_as_the_agent_servers_postgres_store_where_langgraph_dev_lists_otherwise(peer, ours):
    """The two differences kept, where ours does what the Agent Server's PostgreSQL store (PostgresStore) does and
    `langgraph dev`'s in-memory store does not: search lists the latest updated first (the Agent Server documents
    "ordered by last updated time"; the in-memory store lists namespaces, then keys, in the order they were first
    written), and a namespace whose last item is deleted is no longer listed."""
    orders, listed = [], []
    for base in (peer, ours):
        for namespace, key in [("u1", "a"), ("u2", "b"), ("u1", "c"), ("u2", "b")]:
            item = {"namespace": ["order", namespace], "key": key, "value": {}}
            assert httpx.put(f"{base}/store/items", json=item, timeout=30).status_code == 204
        found = httpx.post(f"{base}/store/items/search", json={"namespace_prefix": ["order"]}, timeout=30).json()
        orders.append([(item["namespace"][1], item["key"]) for item in found["items"]])
        httpx.request("DELETE", f"{base}/store/items", json={"namespace": ["order", "u2"], "key": "b"}, timeout=30)
        listed.append(httpx.post(f"{base}/store/namespaces", json={"prefix": ["order"]}, timeout=30).json())
    assert orders == [[("u1", "a"), ("u1", "c"), ("u2", "b")], [("u2", "b"), ("u1", "c"), ("u1", "a")]]
    assert listed == [{"namespaces": [["order", "u1"], ["order", "u2"]]}, {"namespaces": [["order", "u1"]]}]


def test_crons_answer_like_langgraph_dev(peer, ours):
    scenario = cron_steps()
    assert_same(scenario, play(peer, scenario), play(ours, scenario))


def test_every_stream_mode_sends_the_frames_langgraph_dev_sends(peer, ours):
    scenario = differential_runs.stream_steps()
    assert_same(scenario, play_apart(peer, scenario), play_apart(ours, scenario))


def test_run_operations_answer_like_langgraph_dev(peer, ours):
    scenario = differential_runs.run_steps()
    assert_same(scenario, play(peer, scenario), play(ours, scenario))


def test_a_thread_whose_run_input_broke_a_reducer_reads_as_langgraph_dev_shows_it(peer, ours):
    """GET /threads/{id}, the search and the history answer alike. Where `langgraph dev`'s GET /state answers 500
    (its live snapshot applies the refused input again), ours answers what its history shows of that checkpoint."""
    scenario = [Step(method, path, body) for method, path, body in BROKEN_INPUT]
    theirs = play(peer, scenario)
    mine = play(ours, [*scenario, Step("GET", f"/threads/{BROKEN}/state", None)])
    assert_same(scenario, theirs, mine[:-1])
    *_, status, _, state = mine[-1]
    history = theirs[-1][-1]
    assert (status, state) == (200, history[0])
    assert state["values"] == {"messages": [{"content": "hi"}], "echo": "hi"}
    again = [Step("POST", f"/threads/{BROKEN}/runs/wait", {"assistant_id": "echo",
                                                           "input": {"messages": [{"content": "again"}]}})]
    answered = play(ours, again)
    assert answered == play(peer, again) and answered[0][-1]["echo"] == "again"


def test_joining_an_unknown_run_is_a_404_where_langgraph_dev_answers_an_error_as_the_result(peer, ours):
    """The one difference kept: `langgraph dev` (in-memory runtime) answers 200 with `__error__`; its own code says
    the 404 should come first ("throw any 404s before we enter the streaming body"), and a 404 is what the SDK
    raises for every other unknown run."""
    answers = []
    for base in (peer, ours):
        thread = httpx.post(f"{base}/threads", json={}, timeout=30).json()["thread_id"]
        answers.append(httpx.get(f"{base}/threads/{thread}/runs/{new_id()}/join", timeout=30))
    theirs, mine = answers
    assert theirs.status_code == 200 and theirs.json() == {
        "__error__": {"error": "HTTPException", "message": "404: Run not found"}}
    assert mine.status_code == 404 and mine.json() == {"detail": "Not Found"}

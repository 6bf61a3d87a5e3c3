"""Several interrupts at once, compared with LangChain's own Agent Server (`langgraph dev`): a graph whose `Send`
branches each call `interrupt()` (as parallel subagents' approvals do; one more branch asks nothing) is run with
`runs.wait`, read back (thread, state, history) and resumed with `Command(resume={interrupt id: value})`, one branch
then the other two; every answer is compared once ids and timestamps are normalised
(tests/agentserver/support_differential.py)."""

from __future__ import annotations

import httpx
import pytest

from tests.agentserver.support_differential import PEER, Normaliser, peer_serving
from tests.support_processes import BASE_DIR, graphs_served

pytestmark = [pytest.mark.live, pytest.mark.no_postgres_pass]
PROJECT = BASE_DIR / "tests" / "agentserver" / "project_interrupts"
TOPICS = {"topics": ["alpha", "auto", "beta", "gamma"]}


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    if not PEER.exists():
        pytest.skip("langgraph dev is not installed: run scripts/test-deps.d/40-langgraph-dev.sh")
    with peer_serving(PROJECT, tmp_path_factory.mktemp("peer")) as url:
        yield url


@pytest.fixture
def ours(transactional_db, tmp_path):
    env = {"DJANGO_SETTINGS_MODULE": "deployments.serving.settings", "CHAT_ALLOW_ANONYMOUS": "true",
           "CHAT_TRACING_PROJECT": ""}
    with graphs_served(PROJECT / "langgraph.json", env=env, log_path=tmp_path / "ours.log") as url:
        yield url


class Labels:
    """Interrupt and task ids named after the question they carry (`<interrupt: Approve alpha?>`), the same on both
    servers whatever order a response visits them in (the thread's `interrupts` are keyed by task id)."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def learn(self, value) -> None:
        if isinstance(value, dict):
            question = (value.get("value") or {}).get("question") if isinstance(value.get("value"), dict) else None
            if question and isinstance(value.get("id"), str):
                self.names[value["id"]] = f"<interrupt: {question}>"
            for interrupt in value.get("interrupts") or [] if "name" in value and "path" in value else []:
                self.names[value["id"]] = f"<task: {interrupt['value']['question']}>"
            for key, found in value.items():
                if isinstance(found, list) and found and all(isinstance(i, dict) and "value" in i for i in found):
                    if key not in ("interrupts", "__interrupt__"):  # the thread's interrupts, keyed by task id
                        self.names[key] = f"<task: {found[0]['value']['question']}>"
                self.learn(found)
        elif isinstance(value, list):
            for item in value:
                self.learn(item)

    def __call__(self, value):
        self.learn(value)
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return self.names.get(value, value) if isinstance(value, str) else value


def pending(client: httpx.Client, thread: str) -> dict[str, str]:
    """The thread's waiting interrupts: question -> id."""
    state = client.get(f"/threads/{thread}/state").json()
    return {i["value"]["question"]: i["id"] for i in state["interrupts"]}


def play_pair(base: str) -> list[tuple]:
    """Three ask at once (a fourth branch asks nothing), answer one, then the other two together; every answer on
    the way."""
    normalise, labels, answers = Normaliser(), Labels(), []
    with httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
        thread = client.post("/threads", json={}).json()["thread_id"]

        def step(method: str, path: str, body: object = None) -> httpx.Response:
            response = client.request(method, path.format(thread=thread), json=body)
            answers.append((method, path, response.status_code, normalise(labels(response.json()))))
            return response

        def read_back() -> None:
            step("GET", "/threads/{thread}")
            step("GET", "/threads/{thread}/state")
            step("GET", "/threads/{thread}/state?subgraphs=true")

        step("POST", "/threads/{thread}/runs/wait", {"assistant_id": "pair", "input": TOPICS})
        read_back()
        waiting = pending(client, thread)
        step("POST", "/threads/{thread}/runs/wait", {"assistant_id": "pair", "command": {
            "resume": {waiting["Approve alpha?"]: "yes"}}})
        read_back()
        waiting = pending(client, thread)
        step("POST", "/threads/{thread}/runs/wait", {"assistant_id": "pair", "command": {
            "resume": {waiting["Approve beta?"]: "no", waiting["Approve gamma?"]: "later"}}})
        read_back()
        step("POST", "/threads/{thread}/history", {"limit": 10})
    return answers


def thread_values(answers: list[tuple]) -> list:
    """The `values` of each GET /threads/:id answer, taken out of it."""
    return [answer[3].pop("values") for answer in answers if answer[:2] == ("GET", "/threads/{thread}")]


def state_values(answers: list[tuple]) -> list:
    return [answer[3]["values"] for answer in answers if answer[:2] == ("GET", "/threads/{thread}/state")]


def test_parallel_interrupts_wait_show_and_resume_like_langgraph_dev(peer, ours):
    theirs, mine = play_pair(peer), play_pair(ours)
    # runs.wait answers every waiting interrupt, in the order they were raised, and nothing else.
    assert mine[0][3] == {"__interrupt__": [{"id": f"<interrupt: Approve {topic}?>", "response_schema": None,
                                             "value": {"question": f"Approve {topic}?"}}
                                            for topic in ("alpha", "beta", "gamma")]}
    kept = thread_values(theirs), thread_values(mine)
    for expected, found in zip(theirs, mine, strict=True):
        assert found == expected, expected[:2]
    # The one difference kept: while branches wait, the thread's `values` (GET /threads/:id) include what the
    # finished branches wrote, as both servers' `get_state` shows; `langgraph dev` shows its channels there, without
    # the step's pending writes.
    their_threads, my_threads = kept
    assert my_threads == state_values(mine) == state_values(theirs)
    assert [sorted(v["answers"]) for v in their_threads] == [[], [], sorted(state_values(theirs)[-1]["answers"])]
    assert [sorted(v["answers"]) for v in my_threads] == [["auto: done"], ["alpha: yes", "auto: done"],
                                                          ["alpha: yes", "auto: done", "beta: no", "gamma: later"]]

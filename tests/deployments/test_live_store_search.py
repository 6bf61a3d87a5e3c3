"""Semantic search through a deployed revision: a project whose langgraph.json configures `store.index` with its own
embedding function (`./embed.py:aembed_texts`, resolved against the project's directory) and `store.ttl`, called with
the official Python SDK. The ranking and scores are checked against the exact cosine similarity computed here."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from accounts.services import api_key_create
from tests.agentruntime.store_embedding import DIMS, cosine, embed
from tests.deployments.support_projects import CONFIG, deploy_test_project, make_project
from tests.deployments.test_live import Api

pytestmark = pytest.mark.live

DOCS = {
    "apple": {"text": "red apple pie", "color": "red"},
    "car": {"text": "a fast red car", "color": "red"},
    "tree": {"text": "green apple tree", "color": "green"},
    "sky": {"text": "blue sky at noon", "color": "blue"},
}


def store_project(root: Path) -> Path:
    embed_source = (Path(__file__).parents[1] / "agentruntime" / "store_embedding.py").read_text()
    config = {**CONFIG, "store": {"index": {"embed": "./embed.py:aembed_texts", "dims": DIMS, "fields": ["text"]},
                                  "ttl": {"default_ttl": 60, "refresh_on_read": True, "sweep_interval_minutes": 1}}}
    return make_project(root, config=config, files={"embed.py": embed_source})


def exact(docs: dict[str, dict], query: str) -> list[tuple[str, float]]:
    scores = {key: cosine(embed(query), embed(value["text"])) for key, value in docs.items()}
    return sorted(scores.items(), key=lambda pair: -pair[1])


def test_a_deployed_revision_ranks_the_sdk_s_store_search_by_the_project_s_own_embeddings(
        stack_factory, workspace, tmp_path):
    owner = api_key_create(workspaces=[workspace])[1]
    stack = stack_factory()
    custom_url = deploy_test_project(Api(stack.url, owner), tmp_path, name="store-search",
                                     project=store_project(tmp_path / "project"))
    client = get_sync_client(url=custom_url, api_key=owner)
    try:
        for key, value in DOCS.items():
            client.store.put_item(["docs"], key, value)
        client.store.put_item(["docs"], "unindexed", {"text": "apple apple"}, index=False)

        for query in ("apple", "red car", "noon"):
            found = client.store.search_items(["docs"], query=query, limit=10)["items"]
            expected = exact(DOCS, query)
            assert [item["key"] for item in found] == [key for key, _ in expected] + ["unindexed"]
            assert [item["score"] for item in found[:-1]] == pytest.approx([s for _, s in expected], abs=1e-5)
            assert found[-1]["score"] is None

        red = client.store.search_items(["docs"], query="apple", filter={"color": "red"})["items"]
        assert [item["key"] for item in red] == [k for k, _ in exact({k: DOCS[k] for k in ("apple", "car")}, "apple")]
        plain = client.store.search_items(["docs"], limit=10)["items"]
        assert all(item["score"] is None for item in plain)
    finally:
        client.close()

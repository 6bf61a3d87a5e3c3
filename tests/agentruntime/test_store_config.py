"""langgraph.json's `store` (and CHAT_STORE_CONFIG): checked before a deploy, its embedding function loaded from the
project's directory or a provider, and applied to every store the graphs and the /store routes get."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentruntime.store import config as store_config
from agentruntime.store import config_shape as store_schema
from deployments import langgraph_config
from tests.agentruntime.store_embedding import DIMS, embed

EMBED_FILE = Path(__file__).parent / "store_embedding.py"


@pytest.fixture(autouse=True)
def restore_store_config():
    yield
    store_config.configure(None, base_dir=Path("."))


def project(root: Path, store: dict) -> Path:
    (root / "graph.py").write_text("graph = None\n")
    (root / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": {"agent": "./graph.py:graph"},
                                                     "store": store}))
    return root


@pytest.mark.parametrize(("store", "message"), [
    ("yes", "must be an object"),
    ({"index": {"embed": "./embed.py:embed_texts"}}, "dims must be a positive integer"),
    ({"index": {"embed": "./embed.py:embed_texts", "dims": True}}, "dims must be a positive integer"),
    ({"index": {"embed": "embed_texts", "dims": 8}}, "embed must be"),
    ({"index": {"embed": "./embed.py:embed_texts", "dims": 8, "fields": "text"}}, "fields must be a list"),
    ({"ttl": {"default_ttl": -1}}, "default_ttl must be a positive number"),
    ({"ttl": {"sweep_interval_minutes": "5"}}, "sweep_interval_minutes must be a positive number"),
    ({"ttl": {"refresh_on_read": "no"}}, "refresh_on_read must be true or false"),
])
def test_a_wrong_store_object_fails_the_deploy_with_what_to_fix(tmp_path, store, message):
    project(tmp_path, store)

    with pytest.raises(langgraph_config.ConfigError, match=message):
        langgraph_config.load(source_root=tmp_path, config_path="langgraph.json")


def test_a_right_store_object_passes_the_deploy_checks(tmp_path):
    project(tmp_path, {"index": {"embed": "openai:text-embedding-3-small", "dims": 1536, "fields": ["text"]},
                       "ttl": {"default_ttl": 60, "refresh_on_read": False, "sweep_interval_minutes": 5}})

    assert langgraph_config.load(source_root=tmp_path, config_path="langgraph.json").graphs


def test_a_project_s_embedding_function_loads_relative_to_its_directory(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    shutil.copy(EMBED_FILE, tmp_path / "sub" / "embed.py")
    monkeypatch.chdir("/")

    store_config.configure({"index": {"embed": "./sub/embed.py:embed_texts", "dims": DIMS}}, base_dir=tmp_path)
    store = store_config.store_for("test")

    assert store.index_config is not None and store.index_config["fields"] == ["$"]
    assert store.embeddings is not None and store.embeddings.embed_query("apple") == embed("apple")


def test_a_module_s_embedding_function_loads_by_its_dotted_name():
    store_config.configure({"index": {"embed": "tests.agentruntime.store_embedding:aembed_texts", "dims": DIMS}},
                           base_dir=Path("."))

    assert store_config.store_for("test").embeddings is not None


@pytest.mark.parametrize(("embed_spec", "message"), [
    ("./missing.py:embed_texts", "no file"),
    ("tests.agentruntime.store_embedding:missing", "no attribute"),
    ("no-such-provider:model", "store.index.embed"),
])
def test_an_embedding_function_that_cannot_load_is_a_config_error(tmp_path, embed_spec, message):
    with pytest.raises(store_config.StoreConfigError, match=message):
        store_config.configure({"index": {"embed": embed_spec, "dims": DIMS}}, base_dir=tmp_path)


def test_the_service_reads_chat_store_config(settings):
    settings.CHAT_STORE_CONFIG = json.dumps({"index": {"embed": "tests.agentruntime.store_embedding:embed_texts",
                                                       "dims": DIMS}, "ttl": {"default_ttl": 5}})
    store_config.configure_from_settings()

    store = store_config.store_for("owner")

    assert store.embeddings is not None and store.ttl_config == {"default_ttl": 5}
    assert store_schema.settings_sweep_seconds() == store_schema.DEFAULT_SWEEP_SECONDS


def test_a_chat_store_config_that_is_not_json_is_a_config_error(settings):
    settings.CHAT_STORE_CONFIG = "{index"

    with pytest.raises(store_config.StoreConfigError, match="not valid JSON"):
        store_config.configure_from_settings()

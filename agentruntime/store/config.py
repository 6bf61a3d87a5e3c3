"""Which store the graphs and the /store routes get: langgraph.json's `store` (`index`, `ttl`) applied to DjangoStore.

A revision's serving process reads its project's langgraph.json (deployments/serving's serve_graphs) and configures
this module with its `store`, `./file.py` paths resolved against the project's directory; the service reads
CHAT_STORE (the same JSON object, paths against the service's directory) for its own graphs, the deep agent's.
`index.embed` is a LangChain provider string (`openai:text-embedding-3-small`, through init_embeddings) or the
project's own function (`./embed.py:aembed_texts`, `package.module:embed`), sync or async, taking a list of texts and
returning their vectors. `ttl.sweep_interval_minutes` sets how often the periodic sweep runs (agentruntime/jobs.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, TTLConfig, ensure_embeddings

from agentruntime import served_graphs
from agentruntime.store.config_shape import SWEEP_JOB, StoreConfigError, check, sweep_seconds
from agentruntime.store.django_store import DjangoStore
from core.registry import periodic_reschedule


@dataclass(frozen=True)
class StoreSettings:
    index: IndexConfig | None = None
    ttl: TTLConfig | None = None


_lock = threading.Lock()
# None until configured: the first store then reads CHAT_STORE_CONFIG.
_settings: StoreSettings | None = None


def configure(raw: dict | None, *, base_dir: Path) -> None:
    """Serve `raw` (a `store` object) from now on; None: no index, no TTLs.

    Raises:
        StoreConfigError: the object is wrong, or its embedding function cannot be loaded.
    """
    global _settings
    check(raw)
    raw = raw or {}
    index = raw.get("index")
    ttl = raw.get("ttl")
    configured = StoreSettings(
        index=IndexConfig(dims=index["dims"], embed=load_embed(index["embed"], base_dir=base_dir),
                          fields=index.get("fields") or ["$"]) if index else None,
        ttl=TTLConfig(**ttl) if ttl else None)
    with _lock:
        _settings = configured
    periodic_reschedule(SWEEP_JOB, every_seconds=sweep_seconds(raw))


def load_embed(spec: str, *, base_dir: Path) -> Embeddings:
    """The embeddings `spec` names: a file's or module's function, or a provider's model (through init_embeddings).

    Raises:
        StoreConfigError: the function cannot be loaded, or the provider's package is missing.
    """
    target, _, attr = spec.rpartition(":")
    importable = spec
    try:
        if target.endswith(".py") or "/" in target:
            importable = f"{(base_dir / target).resolve()}:{attr}"
        elif "." not in target:  # "openai:..." names a provider; package.module:function is imported
            return ensure_embeddings(spec)
        return ensure_embeddings(served_graphs.import_object(importable, what="store.index.embed")[1])
    except (served_graphs.GraphLoadError, ImportError, ValueError) as exc:
        raise StoreConfigError(f"store.index.embed {spec!r}: {exc}") from None


def store_for(scope: str) -> DjangoStore:
    """The store of one owner, with the configured index and TTLs (CHAT_STORE_CONFIG's, unless configured).

    Raises:
        StoreConfigError: CHAT_STORE_CONFIG is wrong.
    """
    with _lock:
        current = _settings
    if current is None:
        configure_from_settings()
        return store_for(scope)
    return DjangoStore(scope=scope, index=current.index, ttl=current.ttl)


def configure_from_settings() -> None:
    """Configure the service's store from CHAT_STORE_CONFIG (a JSON object, or empty)."""
    raw = settings.CHAT_STORE_CONFIG.strip()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError as exc:
        raise StoreConfigError(f"CHAT_STORE_CONFIG is not valid JSON: {exc}") from None
    configure(parsed, base_dir=Path(settings.BASE_DIR))

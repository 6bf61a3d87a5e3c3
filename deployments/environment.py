"""Environments for tenant code, built from an allowlist rather than copied from the service.

A revision's process sees its own secrets, PATH, HOME and the settings of its own serving
process (its deployment's database, freshly generated keys), never the service's
DATABASE_URL, FIELD_ENCRYPTION_KEY, SECRET_KEY or anything else from the service's environment.
"""

from __future__ import annotations

import json
import os
import secrets as random
from pathlib import Path

from cryptography.fernet import Fernet
from django.conf import settings

from deployments.models import Revision

# pip needs to reach an index (or a proxy) and trust its certificates; nothing else passes.
_PIP_PASSTHROUGH_PREFIXES = ("PIP_",)
_PIP_PASSTHROUGH = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
                    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def base_env(*, home: Path, venv_bin: Path | None = None) -> dict[str, str]:
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    return {
        "PATH": f"{venv_bin}{os.pathsep}{path}" if venv_bin else path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def pip_env(*, home: Path) -> dict[str, str]:
    env = base_env(home=home)
    env.update({k: v for k, v in os.environ.items()
                if k in _PIP_PASSTHROUGH or k.startswith(_PIP_PASSTHROUGH_PREFIXES)})
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def serving_env(*, revision: Revision, home: Path, data_dir: Path, venv_bin: Path, port: int | None = None,
                token: str = "", http: dict | None = None, database: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a revision's graph check and serving process; `http` is langgraph.json's checked `http`
    section (ProjectConfig.http), `database` the variables naming the deployment's database
    (databases.connection_env). Without one (the build's graph check, which stores nothing), a scratch SQLite file
    in `data_dir`."""
    deployment = revision.deployment
    env = {s["name"]: s["value"] for s in json.loads(revision.secrets or "[]")}
    env.update(base_env(home=home, venv_bin=venv_bin))
    custom_url = f"{settings.PUBLIC_BASE_URL}/deployments/{deployment.id}"
    env.update({
        "DJANGO_SETTINGS_MODULE": "deployments.serving.settings",
        "DEBUG": "false",
        "SECRET_KEY": random.token_urlsafe(48),
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "DATA_DIR": str(data_dir),
        "PUBLIC_BASE_URL": custom_url,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # The proxy talks plain HTTP on loopback; TLS ends at the service.
        "SECURE_SSL_REDIRECT": "false",
        # The proxy has authenticated the caller; inside, every caller is the deployment's one anonymous owner.
        "CHAT_ALLOW_ANONYMOUS": "true",
        # Chat runs are traced through LANGSMITH_* into the deployment's project, not into this process's database.
        "CHAT_TRACING_PROJECT": "",
        "SERVE_GRAPHS_REVISION_ID": str(revision.id),
        "SERVE_GRAPHS_DEPLOYMENT_ID": str(deployment.id),
        "LOG_LEVEL": "INFO",
    })
    env.update(database or {"SQLITE_PATH": str(data_dir / "db.sqlite3")})
    env.update(_redis_env(deployment))
    if token:
        env["SERVE_GRAPHS_TOKEN"] = token
    if http:
        env["LANGGRAPH_HTTP"] = json.dumps(http)
    if port:
        env["SERVE_GRAPHS_PORT"] = str(port)
    env.update(_tracing_env(revision))
    return env


def _redis_env(deployment) -> dict[str, str]:
    """The service's Redis, when it has one, wakes a deployment's processes across each other (replicas, and a
    replaced revision beside its successor); the prefix keeps each deployment's channels and cache keys apart."""
    if not settings.REDIS_URL:
        return {}
    return {"REDIS_URL": settings.REDIS_URL, "REDIS_KEY_PREFIX": f"{settings.REDIS_KEY_PREFIX}d{deployment.id.hex}:"}


def _tracing_env(revision: Revision) -> dict[str, str]:
    """The served graphs' chat runs are traced into the deployment's project, through this service's trace API."""
    deployment = revision.deployment
    if not deployment.tracing_api_key_secret:
        return {}
    return {
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_ENDPOINT": settings.PUBLIC_BASE_URL,
        "LANGSMITH_API_KEY": deployment.tracing_api_key_secret,
        "LANGSMITH_PROJECT": deployment.name,
    }

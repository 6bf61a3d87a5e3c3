"""The settings every process of this code base reads from its environment.

Two Django settings modules start from here: the service's (config/settings.py), which adds its apps, routes and
the control plane's, exports', tracing's and OAuth's settings, and a revision's serving process's
(deployments/serving/settings.py), which serves only the Agent Server API and the chat protocol. So the serving
process honours the same variables (databases, keys, Redis, security headers, the chat's chat runs and streams,
logging) without importing the service's settings. Every variable is documented in docs/configuration.md with its
default, and read through one helper per type (core/env.py): a value that cannot be read stops the process with one
line naming the variable. Development defaults are safe and need no services: SQLite in ./data, the in-memory
channel layer, the database cache and an offline scripted model.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url

from core.env import env_bool, env_choice, env_float, env_int, env_list, env_pairs, env_str, refuse_to_start

BASE_DIR = Path(__file__).resolve().parent.parent
log = logging.getLogger("config")

# Checkpoints are only ever rebuilt into an allowlist of safe types, so a tampered checkpoint row
# cannot construct arbitrary objects (GHSA-g48c-2wqr-h844). langgraph reads this once, when it is
# first imported, which is why it is set here before any app imports it; agentruntime/checkpointer/saver.py
# refuses to start if strict mode is not in effect.
os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")


DEBUG = env_bool("DEBUG", True)
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _local_secret(filename: str, generate) -> str:
    """Read a development secret from DATA_DIR, generating it on first use."""
    path = DATA_DIR / filename
    if path.exists():
        return path.read_text().strip()
    value = generate()
    path.write_text(value + "\n")
    path.chmod(0o600)
    print(f"Generated a development {filename} in {path} (set it in the environment for production).",
          file=sys.stderr)
    return value


def _secret_key() -> str:
    value = env_str("SECRET_KEY")
    if value:
        return value
    if not DEBUG:
        refuse_to_start("SECRET_KEY must be set when DEBUG is off.")
    from django.core.management.utils import get_random_secret_key

    return _local_secret("secret_key", lambda: "dev-" + get_random_secret_key())


def _field_encryption_keys() -> list[str]:
    raw = env_str("FIELD_ENCRYPTION_KEY")
    if not raw:
        if not DEBUG:
            refuse_to_start("FIELD_ENCRYPTION_KEY must be set when DEBUG is off.")
        from cryptography.fernet import Fernet

        raw = _local_secret("field_encryption_key", lambda: Fernet.generate_key().decode())
    # The first key encrypts; every key decrypts (rotation).
    return [key.strip() for key in raw.split(",") if key.strip()]


SECRET_KEY = _secret_key()
FIELD_ENCRYPTION_KEY = _field_encryption_keys()

# Unset or empty: `serve` sets it for its children to the address it serves (core/management/commands/serve.py).
PUBLIC_BASE_URL = (env_str("PUBLIC_BASE_URL") or "http://127.0.0.1:8000").rstrip("/")
_public = urlsplit(PUBLIC_BASE_URL)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver" if DEBUG else "")
if _public.hostname and _public.hostname not in ALLOWED_HOSTS:
    ALLOWED_HOSTS.append(_public.hostname)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", f"{_public.scheme}://{_public.netloc}")

# Slash-less API paths are part of the wire contract: never redirect them.
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def middleware(*, pages: bool) -> list[str]:
    """The middleware of a process, in order. `pages` adds what the admin and the HTML pages need (CSRF and
    messages): the service has them, a revision's serving process (the Agent Server API only) does not."""
    csrf = ["django.middleware.csrf.CsrfViewMiddleware"] if pages else []
    messages = ["django.contrib.messages.middleware.MessageMiddleware"] if pages else []
    return [
        "core.middleware.BodyLimitMiddleware",
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        *csrf,
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        *messages,
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
        "core.middleware.JsonErrorPagesMiddleware",
    ]


def _databases() -> dict:
    url = env_str("DATABASE_URL")
    if not url:
        return {"default": _sqlite_database(Path(env_str("SQLITE_PATH", str(DATA_DIR / "db.sqlite3"))))}
    try:
        config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))
    except ValueError as exc:
        # The message only: the URL may carry a password.
        refuse_to_start(f"DATABASE_URL is not a database URL ({str(exc).split('.')[0]}).")
    if config["ENGINE"] == "django.db.backends.sqlite3" and config["NAME"] not in ("", ":memory:"):
        # A sqlite:/// URL names the file SQLITE_PATH would: it gets the same settings.
        return {"default": {**_sqlite_database(Path(config["NAME"])), "CONN_MAX_AGE": config["CONN_MAX_AGE"]}}
    config.setdefault("OPTIONS", {})
    if env_str("TEST_DB_SUFFIX"):
        config["TEST"] = {"NAME": f"test_{config['NAME']}_{env_str('TEST_DB_SUFFIX')}"}
    return {"default": config}


def _sqlite_database(sqlite_path: Path) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": sqlite_path,
        "OPTIONS": {
            # A server, workers and test processes share one file: WAL lets readers run
            # beside a writer, IMMEDIATE takes the write lock up front so that two writers
            # queue on the busy timeout instead of failing with "database is locked".
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # Tests that start real processes need a file they can all open.
        "TEST": {"NAME": str(sqlite_path.with_name(f"test_{env_str('TEST_DB_SUFFIX')}{sqlite_path.name}"))},
    }


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
# Keeps several deployments (or the test suite's parallel processes, which pytest-xdist names in
# PYTEST_XDIST_WORKER) apart on one Redis database: cache keys and channel-layer names get this prefix.
REDIS_KEY_PREFIX = env_str("REDIS_KEY_PREFIX", env_str("PYTEST_XDIST_WORKER"))
# A receive waits on the server up to channels_redis's 5 s (BZPOPMIN); redis-py 8's default socket timeout is 5 s too,
# so without a longer one every idle receive failed with "Timeout reading" and cross-process wake-ups fell back to
# polling meanwhile. Not much longer: a send to a hung Redis waits this long.
CHANNEL_LAYER_SOCKET_TIMEOUT = 7
# The cache is on the request path (throttles): a hung Redis costs a request this long at most, and then nothing
# while the throttles' circuit is open (core/throttling.py).
CACHE_SOCKET_TIMEOUT = env_float("CACHE_SOCKET_TIMEOUT", 0.5)
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT}],
                       "capacity": env_int("CHANNEL_LAYER_CAPACITY", 100),
                       "prefix": f"asgi{REDIS_KEY_PREFIX}"},
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": REDIS_KEY_PREFIX,
                          "OPTIONS": {"socket_timeout": CACHE_SOCKET_TIMEOUT,
                                      "socket_connect_timeout": CACHE_SOCKET_TIMEOUT}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"capacity": env_int("CHANNEL_LAYER_CAPACITY", 100)}}}
    CACHES = {
        "default": {"BACKEND": "core.cache.DatabaseCache", "LOCATION": "service_cache"}
    }

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"

# Request bodies: Django's own limit is replaced by per-route limits in BodyLimitMiddleware,
# which answers 413 before a view reads anything.
DATA_UPLOAD_MAX_MEMORY_SIZE = None
JSON_BODY_MAX_BYTES = env_int("JSON_BODY_MAX_BYTES", 1024 * 1024)
TRACE_BODY_MAX_BYTES = env_int("TRACE_BODY_MAX_BYTES", 20 * 1024 * 1024)
# A zstd-compressed trace batch may inflate to this much (the SDK fills a frame to ~20 MiB before it
# compresses it, plus one run); more is refused with 413 while decompressing.
TRACE_DECOMPRESSED_MAX_BYTES = env_int("TRACE_DECOMPRESSED_MAX_BYTES", 64 * 1024 * 1024)
DEPLOY_UPLOAD_MAX_BYTES = env_int("DEPLOY_UPLOAD_MAX_BYTES", 200 * 1000 * 1000)

# Egress guard (core/egress.py): hosts and CIDRs that tenant-supplied URLs may reach although
# they are not public (e.g. "127.0.0.1,minio.internal,10.1.2.0/24,*.minio.internal").
EGRESS_ALLOWLIST = env_list("EGRESS_ALLOWLIST")

# Security headers; secure defaults whenever DEBUG is off.
_https = _public.scheme == "https"
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_X_FORWARDED_PROTO", False) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG and _https)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]

THROTTLE_RATES = {
    "default": "600/min",
    "workspace-create": "30/min",
    "destination-validation": "10/min",
    "bulk-export-create": "60/min",
    "tracing-ingest": "6000/min",
    "deployment-write": "120/min",
    "auth-flow": "120/min",
}
# THROTTLE_RATES="destination-validation=20/min,default=1000/min" overrides single scopes.
for _scope, _rate in env_pairs("THROTTLE_RATES").items():
    if not re.fullmatch(r"[0-9]+/[smhd][a-z]*", _rate):
        refuse_to_start(f"THROTTLE_RATES must give each scope a rate such as 600/min, not {_scope}={_rate!r}.")
    THROTTLE_RATES[_scope] = _rate

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasApiKeyPermission"],
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.WorkspaceRateThrottle"],
    "DEFAULT_THROTTLE_RATES": THROTTLE_RATES,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "core.exception_handler.handle_exception",
    "DEFAULT_SCHEMA_CLASS": "core.openapi_generation.ServiceAutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Agent operations service: REST API",
    "DESCRIPTION": "The service's own REST API: the deployment control plane, bulk export of trace data, the trace "
                   "store, OAuth and workspaces.\n\nNot here: the **Agent Server API** (assistants, threads, runs, "
                   "crons, store) that the service's deep agent answers under `/api` and every deployment at its "
                   "URL. Its reference is at [/api/docs](/api/docs), and at `{deployment URL}/docs` for a "
                   "deployment.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "DEFAULT_GENERATOR_CLASS": "core.openapi_generation.ServiceSchemaGenerator",
    # The Agent Server API under /api (agentserver) answers in the Agent Server's shapes, not this schema's.
    "PREPROCESSING_HOOKS": ["core.openapi_generation.exclude_separately_documented"],
    # Operations grouped by resource (deployments, bulk exports, traces, OAuth…), not by `api`, `v1`, `v2`.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "core.openapi_generation.resource_tags"],
    # deployments' ids match like `str` (a non-UUID is a 422, not a 404) but are UUIDs.
    "PATH_CONVERTER_OVERRIDES": {"uuidtext": {"type": "string", "format": "uuid"}},
    # One name for a choice set that several fields share (source and revision_source).
    "ENUM_NAME_OVERRIDES": {"DeploymentSourceEnum": "deployments.models.Deployment.Source",
                            "BulkExportFormatVersionEnum": "exports.bulk_exports.models.BulkExport.FormatVersion",
                            "ThreadStatusEnum": "agentserver.selectors.THREAD_STATUSES",
                            "SortOrderEnum": "agentserver.http.SORT_ORDERS"},
}

# This process's stable identity, which outlives a restart: `serve` sets it for each child it supervises
# ("host:serve-<port>:web-0"). A process that starts with one fails at once the chat runs its dead predecessor
# left running (core/process_identity.py). Another supervisor may set a unique, stable name per process; unset, the
# process gets a unique name and the sweeper fails what it leaves behind.
PROCESS_IDENTITY = env_str("PROCESS_IDENTITY")

# Background work (run_worker).
WORKER_LEASE_SECONDS = env_int("WORKER_LEASE_SECONDS", 60)
WORKER_POLL_SECONDS = env_float("WORKER_POLL_SECONDS", 1.0)
# How often a worker looks for Agent Server crons whose tick has come (a schedule finer than this is coalesced).
AGENTSERVER_CRON_POLL_SECONDS = env_float("AGENTSERVER_CRON_POLL_SECONDS", 5.0)

# Demo workspace and admin created by `serve`.
DEMO_WORKSPACE = env_str("DEMO_WORKSPACE", "demo")
ADMIN_USERNAME = env_str("ADMIN_USERNAME", "admin")
ADMIN_PASSWORD = env_str("ADMIN_PASSWORD")

# Streaming chat (chat app). CHAT_MODEL and CHAT_AGENT_DELAY_SCALE are also read by chat/agent directly.
CHAT_MODEL = env_str("CHAT_MODEL")
CHAT_GRAPH = env_str("CHAT_GRAPH", "chat.agent.graph:build_graph")
# The service's own LangGraph store (its graphs', the deep agent's): a JSON object shaped as langgraph.json's "store"
# ({"index": {"embed": ..., "dims": ..., "fields": [...]}, "ttl": {...}}, agentruntime/store/config.py), `./file.py`
# paths relative to the service's directory. Empty: no semantic index, no TTLs. A revision reads its langgraph.json.
CHAT_STORE_CONFIG = env_str("CHAT_STORE_CONFIG")
# Tools whose calls wait for a person's approval ("*": every tool); a run's configurable `approve_tools` overrides it.
CHAT_APPROVE_TOOLS = env_list("CHAT_APPROVE_TOOLS")
CHAT_ALLOW_ANONYMOUS = env_bool("CHAT_ALLOW_ANONYMOUS", DEBUG)
CHAT_WORKSPACE = env_str("CHAT_WORKSPACE", DEMO_WORKSPACE)
CHAT_TRACING_PROJECT = env_str("CHAT_TRACING_PROJECT", "chat")
CHAT_EVENT_RETENTION = env_int("CHAT_EVENT_RETENTION", 20000)
CHAT_MAX_STREAMS = env_int("CHAT_MAX_STREAMS", 50)
CHAT_SSE_HEARTBEAT_SECONDS = env_float("CHAT_SSE_HEARTBEAT_SECONDS", 15)
# What a stream without a cursor replays: "thread" (every retained event, as the examples do) or "run" (the newest
# run only, so that a new client session on an old thread does not take an earlier run's end for its own).
CHAT_REPLAY_SCOPE = env_str("CHAT_REPLAY_SCOPE", "thread")
# Subscribers re-read the event store this often even without a wake-up: that is how a run in another
# process reaches them with the in-memory channel layer, and a safety net behind Redis.
CHAT_STORE_POLL_SECONDS = env_float("CHAT_STORE_POLL_SECONDS", 1.0 if REDIS_URL else 0.1)
CHAT_RUN_HEARTBEAT_SECONDS = env_float("CHAT_RUN_HEARTBEAT_SECONDS", 2)
CHAT_RUN_STALE_SECONDS = env_int("CHAT_RUN_STALE_SECONDS", 30)
# Origins whose browser pages may call the Agent Server API (agentserver/cors.py): comma-separated, "*" for any;
# empty (the default) answers no CORS. Never with credentials: cookies stay same-site.
AGENT_SERVER_CORS_ALLOW_ORIGINS = env_list("AGENT_SERVER_CORS_ALLOW_ORIGINS")
# The `http` section of a revision's langgraph.json (custom routes, disabled route groups, CORS, webhooks), which the
# runner passes to the revision's serving process after the build checked it (deployments/langgraph_http.py).
LANGGRAPH_HTTP: dict = json.loads(os.environ.get("LANGGRAPH_HTTP") or "{}")
CHAT_SWEEP_SECONDS = env_int("CHAT_SWEEP_SECONDS", 10)
# Where runs execute: "web" (every server process runs an executor: the embedded default) or "worker" (only
# run_worker processes do; web processes accept and stream). agentruntime/runs/queue.py.
CHAT_RUN_EXECUTOR = env_choice("CHAT_RUN_EXECUTOR", "web", ("web", "worker"))
# Runs one executor executes at once, and how often it looks for queued runs nobody told it about.
CHAT_RUN_CONCURRENCY = env_int("CHAT_RUN_CONCURRENCY", 10)
CHAT_QUEUE_POLL_SECONDS = env_float("CHAT_QUEUE_POLL_SECONDS", 0.5)

# Any of logging's level names (DEBUG, INFO, WARNING, ERROR, CRITICAL and their aliases).
LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", logging.getLevelNamesMapping())
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # botocore's debug output includes signed headers; never let it reach the logs.
        "botocore": {"level": "WARNING"},
        "boto3": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
        "s3transfer": {"level": "WARNING"},
        # httpx logs every request URL at INFO; tenant URLs may carry tokens in their query.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}

"""Settings for the whole service, read from the environment.

What every process reads (databases, keys, Redis, security headers, the chat's settings, logging) is in
core/settings_env.py, shared with a revision's serving process (deployments/serving/settings.py); this module adds
the service's apps and routes and the settings of the control plane, exports, tracing and OAuth. Every variable is
documented in docs/configuration.md with its default.
"""

from __future__ import annotations

from pathlib import Path

from core.env import env_bool, env_float, env_int, env_list, env_str
from core.settings_env import *  # noqa: F403
from core.settings_env import DATA_DIR, DEBUG, PUBLIC_BASE_URL, middleware

INSTALLED_APPS = [
    "config.apps.DaphneConfig",  # before staticfiles: its `runserver` (ASGI) wins
    "config.apps.ServiceAdminConfig",  # django.contrib.admin with this project's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "core",
    "accounts",
    "tracing",
    "exports.destinations",  # app label `exports`
    "exports.bulk_exports",
    "deployments",
    "deployments.serving",  # serve_graphs and check_graphs
    "agentauth",
    "agentruntime",
    "chat",
    "agentserver",
]

MIDDLEWARE = middleware(pages=True)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

STATIC_ROOT = DATA_DIR / "static"
LOGIN_URL = "/admin/login/"
# Bulk export destinations (exports.destinations).
# Omitted `credentials` = the S3 client's standard credential chain: self-hosted installs only.
EXPORTS_ALLOW_AMBIENT_CREDENTIALS = env_bool("EXPORTS_ALLOW_AMBIENT_CREDENTIALS", False)
EXPORTS_REQUIRE_HTTPS = env_bool("EXPORTS_REQUIRE_HTTPS", not DEBUG)
EXPORTS_CREDENTIAL_PURGE_GRACE_SECONDS = env_int("EXPORTS_CREDENTIAL_PURGE_GRACE_SECONDS", 600)

# Bulk exports and their export runs (exports.bulk_exports; docs/exports.md).
EXPORT_DEFAULT_COMPRESSION = env_str("EXPORT_DEFAULT_COMPRESSION", "gzip")
EXPORT_FILE_ROLLOVER_BYTES = env_int("EXPORT_FILE_ROLLOVER_BYTES", 256 * 1024 * 1024)
EXPORT_BATCH_ROWS = env_int("EXPORT_BATCH_ROWS", 20000)
EXPORT_ROW_GROUP_ROWS = env_int("EXPORT_ROW_GROUP_ROWS", 100_000)
EXPORT_ROW_GROUP_BYTES = env_int("EXPORT_ROW_GROUP_BYTES", 16 * 1024 * 1024)
EXPORT_FETCH_BYTES = env_int("EXPORT_FETCH_BYTES", 1024 * 1024)
EXPORT_PART_BYTES = env_int("EXPORT_PART_BYTES", 8 * 1024 * 1024)
EXPORT_MALLOC_MMAP_THRESHOLD_BYTES = env_int("EXPORT_MALLOC_MMAP_THRESHOLD_BYTES", 128 * 1024)
EXPORT_BATCH_PAUSE_SECONDS = env_float("EXPORT_BATCH_PAUSE_SECONDS", 0)
EXPORT_RUN_MAX_SECONDS = env_float("EXPORT_RUN_MAX_SECONDS", 4 * 3600)
EXPORT_MAX_RETRIES = env_int("EXPORT_MAX_RETRIES", 20)
EXPORT_RETRY_DELAY_SECONDS = env_float("EXPORT_RETRY_DELAY_SECONDS", 30)
EXPORT_MAX_RUNNING_EXPORTS = env_int("EXPORT_MAX_RUNNING_EXPORTS", 15)
EXPORT_MAX_RUNNING_RUNS = env_int("EXPORT_MAX_RUNNING_RUNS", 45)
EXPORT_SCHEDULE_GRACE_SECONDS = env_int("EXPORT_SCHEDULE_GRACE_SECONDS", 600)
EXPORT_SCHEDULE_MAX_PENDING_CHILDREN = env_int("EXPORT_SCHEDULE_MAX_PENDING_CHILDREN", 3)
EXPORT_SCHEDULE_SECONDS = env_int("EXPORT_SCHEDULE_SECONDS", 60)
EXPORT_SWEEP_SECONDS = env_int("EXPORT_SWEEP_SECONDS", 15)

# Daphne does not serve static files itself; the ASGI app does when this is on.
SERVE_STATIC = env_bool("SERVE_STATIC", True)

# OAuth auth service (agentauth). The frontend callback page is where the browser lands after a
# flow; the default is the project's own page. Flows (and their state) live 10 minutes.
OAUTH_FRONTEND_CALLBACK_URL = env_str("OAUTH_FRONTEND_CALLBACK_URL", f"{PUBLIC_BASE_URL}/auth/done")
OAUTH_FLOW_TTL_SECONDS = env_int("OAUTH_FLOW_TTL_SECONDS", 600)
OAUTH_TOKEN_CONNECT_TIMEOUT_SECONDS = env_float("OAUTH_TOKEN_CONNECT_TIMEOUT_SECONDS", 5)
OAUTH_TOKEN_READ_TIMEOUT_SECONDS = env_float("OAUTH_TOKEN_READ_TIMEOUT_SECONDS", 10)

# Deployment control plane (deployments). The local runner builds and runs tenant code on this
# host, so it is on by default only in development: see docs/deployments.md before enabling it.
DEPLOY_LOCAL_RUNNER_ENABLED = env_bool("DEPLOY_LOCAL_RUNNER_ENABLED", DEBUG)
DEPLOY_ROOT = Path(env_str("DEPLOY_ROOT", str(DATA_DIR / "deployments")))
# Directories under which `file://` git repositories may be deployed (empty: none).
DEPLOY_GIT_ALLOWED_ROOTS = env_list("DEPLOY_GIT_ALLOWED_ROOTS")
DEPLOY_GIT_TIMEOUT_SECONDS = env_int("DEPLOY_GIT_TIMEOUT_SECONDS", 300)
DEPLOY_UPLOAD_URL_TTL_SECONDS = env_int("DEPLOY_UPLOAD_URL_TTL_SECONDS", 900)
DEPLOY_UPLOAD_MAX_FILES = env_int("DEPLOY_UPLOAD_MAX_FILES", 20000)
DEPLOY_UPLOAD_MAX_UNPACKED_BYTES = env_int("DEPLOY_UPLOAD_MAX_UNPACKED_BYTES", 1000 * 1000 * 1000)
# Extra arguments for every `pip install` of a build, e.g. "--no-index --find-links /wheels".
DEPLOY_PIP_ARGS = env_str("DEPLOY_PIP_ARGS")
DEPLOY_BUILD_TIMEOUT_SECONDS = env_int("DEPLOY_BUILD_TIMEOUT_SECONDS", 900)
DEPLOY_HEALTH_TIMEOUT_SECONDS = env_int("DEPLOY_HEALTH_TIMEOUT_SECONDS", 90)
DEPLOY_RECONCILE_SECONDS = env_int("DEPLOY_RECONCILE_SECONDS", 15)
# Each deployment's own database (deployments/databases.py) is named this prefix and the deployment's id (hex).
DEPLOY_DATABASE_PREFIX = env_str("DEPLOY_DATABASE_PREFIX", "deployment_")
# How long a replaced revision keeps serving the requests it has (open streams included) before it is stopped.
DEPLOY_DRAIN_SECONDS = env_float("DEPLOY_DRAIN_SECONDS", 30)
# A step whose worker died this many times ends the revision *_FAILED instead of running again.
DEPLOY_STEP_MAX_ATTEMPTS = env_int("DEPLOY_STEP_MAX_ATTEMPTS", 3)

# Trace store (tracing): runs that started more than this many days ago are deleted by the
# `tracing.prune_runs` periodic job and `manage.py prune_runs`; 0 keeps runs forever.
TRACING_RETENTION_DAYS = env_int("TRACING_RETENTION_DAYS", 30)
# A file that gets one JSON line per ingestion request with where its time went (unset: off).
TRACING_INGEST_LOG = env_str("TRACING_INGEST_LOG")


"""Settings of a revision's serving process (`serve_graphs`): the Agent Server API and the chat protocol only.

It reads the environment as the service does (core/settings_env.py, shared with config/settings.py), and the
environment (deployments/environment.py) gives it its own SQLite database and keys; here it only sets what is
served: the Agent Server API, the chat protocol routes and /ok, nothing else.
It also installs only the apps that serve them: the control plane, exports, tracing, OAuth and the
admin stay out, so their models are not migrated into the revision's database, their periodic jobs
do not run here, and the libraries they import (botocore, pyarrow, ...) are not loaded.
"""

from __future__ import annotations

import copy

from core import settings_env
from core.settings_env import *  # noqa: F403

INSTALLED_APPS = [
    "deployments.serving.apps.LeanServingProcessConfig",  # first: see its ready()
    # Threads, runs and assistants belong to a workspace (accounts) or a user (auth, with contenttypes for its
    # permissions); callers are resolved from an API key or a session cookie (sessions), else anonymous.
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "rest_framework",
    "drf_spectacular",  # GET /docs (agentserver/api_docs.py): its template and Swagger UI's files
    "drf_spectacular_sidecar",
    "channels",
    "core",
    "accounts",
    "agentruntime",
    "chat",
    "agentserver",
]
# No admin, no pages: what the Agent Server views need (the session's user, which agentruntime.access.authorize reads
# when no API key is sent) and the security headers.
MIDDLEWARE = settings_env.middleware(pages=False)
ROOT_URLCONF = "deployments.serving.urls"
ASGI_APPLICATION = "deployments.serving.asgi.application"
CHAT_RUN_EXECUTOR = "web"  # a revision executes its own runs: nothing else serves its graphs
# Runs are traced through LANGSMITH_* (deployments/environment.py); the tracing app is not installed here.
CHAT_TRACING_PROJECT = ""
DATABASES = copy.deepcopy(settings_env.DATABASES)  # changed below, for this process only
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite keeps up to 2 MiB of pages per connection by default, and every thread here keeps its own connection
    # (agentruntime/db_executor.py's pool, the views' thread, the periodic jobs): a revision's small database is in the
    # OS's page cache anyway, so 512 KiB each is enough.
    DATABASES["default"]["OPTIONS"]["init_command"] += " PRAGMA cache_size=-512;"
    # Python's sqlite3 keeps 128 prepared statements per connection; the event log's bulk inserts (one statement
    # per batch size) filled them with large programs, several MiB per connection. 32 hold the hot queries.
    DATABASES["default"]["OPTIONS"]["cached_statements"] = 32
# Django closes the request thread's connection when a request ends (CONN_MAX_AGE 0); all requests share one thread
# here (deployments/serving/asgi.py), so every run's request opened a new connection: on SQLite with its PRAGMAs and
# SQL functions, on PostgreSQL a new server backend, and either way without its prepared statements. The one thread
# keeps its connection; a PostgreSQL connection that the server dropped is found by the health check and replaced.
DATABASES["default"]["CONN_MAX_AGE"] = None
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

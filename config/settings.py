"""Settings for the whole service, read from the environment.

Every variable is documented in the README with its default. Development defaults are
safe and need no services: SQLite in ./data, the in-memory channel layer, the database
cache and an offline scripted model.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
log = logging.getLogger("config")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}") from None


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


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


def _refuse_to_start(variable: str) -> None:
    # One clear line instead of a traceback: the operator only needs the variable name.
    sys.stderr.write(f"Refusing to start: {variable} must be set when DEBUG is off.\n")
    raise SystemExit(1)


def _secret_key() -> str:
    value = env_str("SECRET_KEY")
    if value:
        return value
    if not DEBUG:
        _refuse_to_start("SECRET_KEY")
    from django.core.management.utils import get_random_secret_key

    return _local_secret("secret_key", lambda: "dev-" + get_random_secret_key())


def _field_encryption_keys() -> list[str]:
    raw = env_str("FIELD_ENCRYPTION_KEY")
    if not raw:
        if not DEBUG:
            _refuse_to_start("FIELD_ENCRYPTION_KEY")
        from cryptography.fernet import Fernet

        raw = _local_secret("field_encryption_key", lambda: Fernet.generate_key().decode())
    # The first key encrypts; every key decrypts (rotation).
    return [key.strip() for key in raw.split(",") if key.strip()]


SECRET_KEY = _secret_key()
FIELD_ENCRYPTION_KEY = _field_encryption_keys()

PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
_public = urlsplit(PUBLIC_BASE_URL)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver" if DEBUG else "")
if _public.hostname and _public.hostname not in ALLOWED_HOSTS:
    ALLOWED_HOSTS.append(_public.hostname)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", f"{_public.scheme}://{_public.netloc}")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
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
    "exports",
    "deployments",
    "chat",
]

MIDDLEWARE = [
    "core.middleware.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.JsonErrorPagesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"
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


def _databases() -> dict:
    url = env_str("DATABASE_URL")
    if url:
        config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))
        config.setdefault("OPTIONS", {})
        if env_str("TEST_DB_SUFFIX"):
            config["TEST"] = {"NAME": f"test_{config['NAME']}_{env_str('TEST_DB_SUFFIX')}"}
        return {"default": config}
    sqlite_path = Path(env_str("SQLITE_PATH", str(DATA_DIR / "db.sqlite3")))
    return {
        "default": {
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
    }


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "service_cache"}
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
LOGIN_URL = "/admin/login/"

# Request bodies: Django's own limit is replaced by per-route limits in BodyLimitMiddleware,
# which answers 413 before a view reads anything.
DATA_UPLOAD_MAX_MEMORY_SIZE = None
JSON_BODY_MAX_BYTES = env_int("JSON_BODY_MAX_BYTES", 1024 * 1024)
TRACE_BODY_MAX_BYTES = env_int("TRACE_BODY_MAX_BYTES", 20 * 1024 * 1024)
DEPLOY_UPLOAD_MAX_BYTES = env_int("DEPLOY_UPLOAD_MAX_BYTES", 200 * 1000 * 1000)

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
for _item in env_list("THROTTLE_RATES"):
    _scope, _, _rate = _item.partition("=")
    THROTTLE_RATES[_scope.strip()] = _rate.strip()

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasApiKeyPermission"],
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.WorkspaceRateThrottle"],
    "DEFAULT_THROTTLE_RATES": THROTTLE_RATES,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "core.exception_handler.handle_exception",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "LangGraph agent operations service",
    "DESCRIPTION": "Deployment control plane, bulk export of trace data and streaming chat.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "DEFAULT_GENERATOR_CLASS": "core.openapi.ServiceSchemaGenerator",
}

# Daphne does not serve static files itself; the ASGI app does when this is on.
SERVE_STATIC = env_bool("SERVE_STATIC", True)

# Background work (run_worker).
WORKER_LEASE_SECONDS = env_int("WORKER_LEASE_SECONDS", 60)
WORKER_POLL_SECONDS = float(env_str("WORKER_POLL_SECONDS", "1.0"))

# Demo workspace and admin created by `serve`.
DEMO_WORKSPACE = env_str("DEMO_WORKSPACE", "demo")
ADMIN_USERNAME = env_str("ADMIN_USERNAME", "admin")
ADMIN_PASSWORD = env_str("ADMIN_PASSWORD")

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
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
        "daphne": {"level": "WARNING"},
    },
}

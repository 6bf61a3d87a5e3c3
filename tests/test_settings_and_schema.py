"""Settings that must hold in production, the encryption key, health, the schema and the CLI command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db import connection

from accounts.models import ApiKey
from tests.support_processes import BASE_DIR, LiveServer

FERNET_KEY = "uoGoiBF1arfeYZs3TKNQXxvDIPCcx_RQOnSEXdz3XL0="


def run_manage(*args, env=None):
    full_env = {**os.environ, **(env or {})}
    full_env.pop("TEST_DB_SUFFIX", None)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=full_env,
                          capture_output=True, text=True)


@pytest.mark.no_postgres_pass
def test_without_an_encryption_key_and_debug_off_the_service_refuses_to_start_in_one_line(tmp_path):
    result = run_manage("check", env={"DEBUG": "false", "SECRET_KEY": "x" * 60, "FIELD_ENCRYPTION_KEY": "",
                                      "ALLOWED_HOSTS": "example.com", "DATA_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["Refusing to start: FIELD_ENCRYPTION_KEY must be set when DEBUG "
                                                  "is off."]


@pytest.mark.no_postgres_pass
@pytest.mark.parametrize("variable, value, line", [
    ("DEBUG", "maybe", "DEBUG must be true or false, not 'maybe'."),
    ("JSON_BODY_MAX_BYTES", "1MB", "JSON_BODY_MAX_BYTES must be a whole number, not '1MB'."),
    ("WORKER_POLL_SECONDS", "soon", "WORKER_POLL_SECONDS must be a number, not 'soon'."),
    ("CHAT_SSE_HEARTBEAT_SECONDS", "inf", "CHAT_SSE_HEARTBEAT_SECONDS must be a number, not 'inf'."),
    ("CHAT_RUN_EXECUTOR", "gpu", "CHAT_RUN_EXECUTOR must be one of web, worker, not 'gpu'."),
    ("LOG_LEVEL", "verbose", "LOG_LEVEL must be one of CRITICAL, FATAL, ERROR, WARN, WARNING, INFO, DEBUG, NOTSET, "
                             "not 'verbose'."),
    ("THROTTLE_RATES", "default", "THROTTLE_RATES must be a comma-separated list of name=value pairs, not 'default'."),
    ("THROTTLE_RATES", "default=fast", "THROTTLE_RATES must give each scope a rate such as 600/min, not "
                                       "default='fast'."),
    ("DATABASE_URL", "mysqlx://u:secret@h/db", "DATABASE_URL is not a database URL (Scheme 'mysqlx://' is unknown)."),
])
def test_a_variable_that_cannot_be_read_stops_the_service_with_one_line_naming_it(tmp_path, variable, value, line):
    env = {"DATA_DIR": str(tmp_path), "SECRET_KEY": "x" * 60, "FIELD_ENCRYPTION_KEY": FERNET_KEY, variable: value}
    result = run_manage("check", env=env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"Refusing to start: {line}"]


@pytest.mark.no_postgres_pass
def test_an_empty_variable_takes_its_default(tmp_path):
    empty = {name: "" for name in ("DEBUG", "JSON_BODY_MAX_BYTES", "WORKER_POLL_SECONDS", "CHAT_RUN_EXECUTOR",
                                   "LOG_LEVEL", "THROTTLE_RATES")}
    code = ("from django.conf import settings as s; print(s.DEBUG, s.JSON_BODY_MAX_BYTES, s.WORKER_POLL_SECONDS, "
            "s.CHAT_RUN_EXECUTOR, s.LOG_LEVEL, s.THROTTLE_RATES['default'])")
    result = run_manage("shell", "-c", code, env={"DATA_DIR": str(tmp_path), "SECRET_KEY": "x" * 60,
                                                  "FIELD_ENCRYPTION_KEY": FERNET_KEY, **empty})
    printed = result.stdout.splitlines()[-1].split()
    assert printed == ["True", str(1024 * 1024), "1.0", "web", "INFO", "600/min"], result.stderr


@pytest.mark.no_postgres_pass
def test_a_sqlite_database_url_gets_the_settings_sqlite_path_gets(tmp_path):
    code = ("from django.db import connection as c; c.ensure_connection(); "
            "print(c.settings_dict['NAME'], c.settings_dict['OPTIONS']['timeout'], "
            "c.settings_dict['OPTIONS']['transaction_mode'], c.cursor().execute('PRAGMA journal_mode').fetchone()[0])")
    base = {"DATA_DIR": str(tmp_path), "SECRET_KEY": "x" * 60, "FIELD_ENCRYPTION_KEY": FERNET_KEY}
    by_url = run_manage("shell", "-c", code, env={**base, "DATABASE_URL": f"sqlite:///{tmp_path}/by-url.sqlite3"})
    by_path = run_manage("shell", "-c", code, env={**base, "DATABASE_URL": "", "SQLITE_PATH": str(tmp_path / "p.db")})
    printed_by_url, printed_by_path = (run.stdout.splitlines()[-1].split() for run in (by_url, by_path))
    assert printed_by_url == [f"{tmp_path}/by-url.sqlite3", "30", "IMMEDIATE", "wal"], by_url.stderr
    assert printed_by_path[1:] == printed_by_url[1:], by_path.stderr


@pytest.mark.no_postgres_pass
def test_in_development_an_encryption_key_is_generated_once_into_the_data_folder(tmp_path):
    first = run_manage("check", env={"FIELD_ENCRYPTION_KEY": "", "DATA_DIR": str(tmp_path)})
    second = run_manage("check", env={"FIELD_ENCRYPTION_KEY": "", "DATA_DIR": str(tmp_path)})
    assert "Generated a development field_encryption_key" in first.stderr
    assert "field_encryption_key" not in second.stderr
    assert (tmp_path / "field_encryption_key").stat().st_mode & 0o777 == 0o600


@pytest.mark.no_postgres_pass
def test_check_deploy_passes_with_production_settings(tmp_path):
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env={
        "DEBUG": "false", "SECRET_KEY": "k" * 20 + "Zq8!vR2#mN5@xL7$pW3^tY6&uE9*" + "a" * 20,
        "FIELD_ENCRYPTION_KEY": FERNET_KEY, "ALLOWED_HOSTS": "agents.example.com",
        "PUBLIC_BASE_URL": "https://agents.example.com", "DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
def test_create_api_key_prints_one_json_line_and_creates_the_workspace():
    from io import StringIO

    out = StringIO()
    call_command("create_api_key", "--workspace", "cli-ws", "--permission", "tracing:read", stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert set(data) == {"workspace_id", "api_key"}
    key = ApiKey.objects.get()
    assert key.permissions == ["tracing:read"] and str(key.workspaces.get().id) == data["workspace_id"]


@pytest.mark.django_db
def test_create_api_key_without_permissions_grants_all():
    from io import StringIO

    call_command("create_api_key", "--workspace", "cli-ws", stdout=StringIO())
    assert "workspaces:manage" in ApiKey.objects.get().permissions


@pytest.mark.django_db
def test_the_openapi_schema_generates_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(target))
    schema = target.read_text()
    assert "/api/v1/workspaces" in schema


@pytest.mark.django_db
def test_swagger_ui_is_served_with_local_assets(client):
    page = client.get("/api/reference/")
    assert page.status_code == 200
    assert b"drf_spectacular_sidecar" in page.content or b"/static/" in page.content
    assert b"cdn.jsdelivr" not in page.content
    assert client.get("/api/schema/").status_code == 200


@pytest.mark.django_db
def test_the_rest_reference_moved_off_the_agent_server_pages_path_and_its_old_address_redirects(client):
    rest, agent_server = client.get("/api/reference/"), client.get("/api/docs")
    assert b"<title>Agent operations service: REST API</title>" in rest.content
    assert b"<title>Agent Server API</title>" in agent_server.content
    old = client.get("/api/docs/")
    assert old.status_code == 301 and old["Location"] == "/api/reference/"


@pytest.mark.django_db
def test_health_is_200_when_the_database_answers(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["database"] == "ok"


@pytest.mark.live
@pytest.mark.no_postgres_pass
def test_health_is_503_when_the_database_is_unreachable(tmp_path):
    import time

    import httpx

    server = LiveServer(env={"DATABASE_URL": "postgres://postgres@127.0.0.1:9/none"}, log_path=tmp_path / "s.log")
    ChildStart = super(LiveServer, server).start  # start without waiting for a 2xx
    ChildStart()
    try:
        deadline, status = time.monotonic() + 30, None
        while time.monotonic() < deadline and status is None:
            try:
                status = httpx.get(f"{server.url}/healthz", timeout=5).status_code
            except httpx.HTTPError:
                time.sleep(0.2)
        assert status == 503
    finally:
        server.stop()


@pytest.mark.django_db
def test_the_test_database_is_a_file_other_processes_can_open():
    if connection.vendor == "sqlite":
        # pytest-xdist gives each test process its own copy: "….sqlite3_gw0".
        assert ".sqlite3" in str(connection.settings_dict["NAME"])
        assert "memory" not in str(connection.settings_dict["NAME"])

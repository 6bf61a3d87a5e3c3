"""PostgreSQL setup as docs/operations.md gives it: its commands, run against the local server with a database name
of their own, create and migrate the database; a `DATABASE_URL` naming a database that does not exist gets one line
with the command that creates it, not psycopg's traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest

from tests.support_processes import BASE_DIR
from tests.test_readme_quickstart import bash_blocks, section

psycopg = pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (requirements.txt)")

OPERATIONS = BASE_DIR / "docs" / "operations.md"
SERVER = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
DOC_NAME = "agentops"  # the database name the doc's commands use


@pytest.fixture
def database_name():
    """A database name no one uses on the local PostgreSQL server (skipped without one); the database is dropped
    afterwards if the test made it."""
    try:
        psycopg.connect(**SERVER, dbname="postgres", connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"needs PostgreSQL on 127.0.0.1:5432 with user postgres: {str(exc).strip()}")
    name = f"ops_setup_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(**SERVER, dbname="postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def command_env(**extra: str) -> dict[str, str]:
    """This environment without the test run's database settings: the commands use only what they are given."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TEST_DB_SUFFIX")}
    return {**env, **extra}


def migrated_apps(name: str) -> set[str]:
    """The apps with migrations applied in database `name`."""
    with psycopg.connect(**SERVER, dbname=name) as conn:
        return {app for (app,) in conn.execute("SELECT DISTINCT app FROM django_migrations")}


def test_the_postgresql_section_of_docs_operations_creates_and_migrates_a_database(database_name):
    blocks = bash_blocks(section(OPERATIONS.read_text(), "Run on PostgreSQL and Redis"))
    assert len(blocks) == 1, "the section should give its commands in one block"
    script = blocks[0].rstrip()
    assert script.endswith("\n./scripts/serve.sh"), "the block should end by starting the service"
    script = script.removesuffix("./scripts/serve.sh")  # it serves until stopped: migrate (the block's) is enough
    assert script.count(DOC_NAME) == 2, f"the block should name its database {DOC_NAME!r} in createdb and the URL"
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script.replace(DOC_NAME, database_name)], cwd=BASE_DIR,
                            env=command_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {"deployments", "exports", "chat", "tracing", "accounts"} <= migrated_apps(database_name)


def test_a_database_that_does_not_exist_is_said_in_one_line_with_the_command_that_creates_it(database_name):
    env = command_env(DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database_name}")
    result = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    output = (result.stdout + result.stderr).strip()
    assert "Traceback" not in output and len(output.splitlines()) == 1, output
    assert f'The PostgreSQL database "{database_name}" (DATABASE_URL) does not exist on 127.0.0.1:5432.' in output
    createdb = re.search(r"Create it with: (createdb [^(]*?)\s+\(", output).group(1)
    assert createdb == f"createdb -h 127.0.0.1 -p 5432 -U postgres {database_name}"
    # The command it gives works: after it, the same migrate succeeds.
    subprocess.run(createdb.split(), check=True, timeout=60)
    retried = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=BASE_DIR, env=env,
                             capture_output=True, text=True, timeout=600)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert {"deployments", "exports", "chat", "tracing", "accounts"} <= migrated_apps(database_name)

"""A deployment's own database: created before its first revision starts, shared by every revision, dropped with it.

LangSmith gives each deployment one database that outlives its revisions, so a redeploy keeps every assistant,
thread, run, store item and cron. Here it lives beside the service's own:
- the service on PostgreSQL: a database of its own on the same server, named from the deployment's id, owned by a
  role of its own (its password kept encrypted on the deployment) where the service's user may create roles, and
  closed to every other role (`REVOKE CONNECT … FROM PUBLIC`);
- the service on SQLite: one file under DEPLOY_ROOT/databases/<id>/, in WAL mode like the service's own.

Every step is idempotent: a creation cut short (a refused CREATE, a full disk) leaves nothing a retry trips on.
This module is the one place that speaks to the database server as an administrator; it writes no model rows
(deployments.services records what it returns).
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.conf import settings

log = logging.getLogger("deployments.databases")
# What PostgreSQL answers a DROP of a database that sessions still use: `object_in_use`.
_IN_USE = "55006"
LEGACY_SQLITE = Path("data") / "db.sqlite3"


class DatabaseError(Exception):
    """The deployment's database could not be created or dropped; the message says why, without secrets."""


class DatabaseInUse(DatabaseError):
    """The database still has sessions: dropping it now would cut them off. Try again once they are gone."""


@dataclass(frozen=True)
class DeploymentDatabase:
    """Where a deployment's data lives: `name` (a PostgreSQL database or a SQLite path), and the role's password."""

    engine: str  # "postgresql" or "sqlite"
    name: str
    role: str = ""
    password: str = ""


def _is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def database_name(deployment_id) -> str:
    """The PostgreSQL name of a deployment's database and role: fits the server's 63 characters."""
    return f"{settings.DEPLOY_DATABASE_PREFIX}{deployment_id.hex}"


def sqlite_path(deployment_id) -> Path:
    return Path(settings.DEPLOY_ROOT) / "databases" / str(deployment_id) / "db.sqlite3"


# --- creation ------------------------------------------------------------------------------------------------------
def ensure(*, deployment_id, password: str, adopt: Path | None = None) -> DeploymentDatabase:
    """Create the deployment's database if it is missing (a second call finds it and changes nothing).

    `password` is the role's (kept by the caller); `adopt`, a SQLite file a revision of an older version of this
    service served from, becomes the deployment's database on SQLite, so an upgrade loses none of its data.
    Raises DatabaseError with the reason.
    """
    if _is_postgres():
        return _postgres_ensure(database_name(deployment_id), password)
    return _sqlite_ensure(sqlite_path(deployment_id), adopt)


def _sqlite_ensure(path: Path, adopt: Path | None) -> DeploymentDatabase:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _sqlite_create(path, adopt)
    except (OSError, sqlite3.Error) as exc:
        raise DatabaseError(f"Could not create the deployment's SQLite database: {exc}.") from None
    return DeploymentDatabase("sqlite", str(path))


def _sqlite_create(path: Path, adopt: Path | None) -> None:
    """Write the file under a temporary name and rename it: a copy cut short is never taken for the database."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    target = sqlite3.connect(partial)
    try:
        if adopt is not None and adopt.is_file():
            # The backup API copies a consistent snapshot, WAL included, even while the old process writes.
            source = sqlite3.connect(f"file:{adopt}?mode=ro", uri=True)
            try:
                source.backup(target)
            finally:
                source.close()
            log.info("adopted %s as the deployment's database %s", adopt, path)
        target.execute("PRAGMA journal_mode=WAL")
    finally:
        target.close()
    # A -wal or -shm file left beside a missing database would be replayed onto the new one: they are stale.
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    partial.rename(path)


def _admin_connection():
    """An autocommit connection to the service's own database, as the service's user (CREATE DATABASE cannot run in
    a transaction)."""
    import psycopg

    db = settings.DATABASES["default"]
    return psycopg.connect(dbname=db["NAME"], user=db.get("USER") or None, password=db.get("PASSWORD") or None,
                           host=db.get("HOST") or None, port=db.get("PORT") or None, autocommit=True,
                           connect_timeout=10)


def _postgres_ensure(name: str, password: str) -> DeploymentDatabase:
    import psycopg
    from psycopg import sql

    try:
        with _admin_connection() as conn:
            role = _ensure_role(conn, name, password)
            owner = conn.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s",
                                 (name,)).fetchone()
            if owner is None:
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(name), sql.Identifier(role or _current_user(conn))))
            elif role and owner[0] != role:
                raise DatabaseError(f"The database name {name} is taken by another owner ({owner[0]}).")
            # Other deployments' roles (PUBLIC) may not even connect to it.
            conn.execute(sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise DatabaseError(f"PostgreSQL refused to create the database {name}: {_first_line(exc)}") from None
    return DeploymentDatabase("postgresql", name, role, password if role else "")


def _ensure_role(conn, name: str, password: str) -> str:
    """The deployment's own login role with `password` (created or its password set); "" when the service's user
    may not create roles, and the database is then owned by the service's user."""
    import psycopg
    from psycopg import sql

    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
    statement = "ALTER ROLE {} WITH LOGIN PASSWORD {}" if exists else "CREATE ROLE {} WITH LOGIN PASSWORD {}"
    try:
        conn.execute(sql.SQL(statement).format(sql.Identifier(name), sql.Literal(password)))
    except psycopg.errors.InsufficientPrivilege:
        log.warning("the service's database user may not create roles: deployment database %s is owned by it", name)
        return ""
    return name


def _current_user(conn) -> str:
    return conn.execute("SELECT current_user").fetchone()[0]


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# --- use -----------------------------------------------------------------------------------------------------------
def recorded(*, name: str, role: str, password: str) -> DeploymentDatabase | None:
    """The database a deployment's fields record (None before it has one)."""
    if not name:
        return None
    return DeploymentDatabase("postgresql" if _is_postgres() else "sqlite", name, role, password)


def connection_env(database: DeploymentDatabase) -> dict[str, str]:
    """The variables that point a serving process at the deployment's database (core/settings_env.py reads them)."""
    if database.engine == "sqlite":
        return {"SQLITE_PATH": database.name}
    db = settings.DATABASES["default"]
    user = database.role or db.get("USER") or ""
    password = database.password if database.role else (db.get("PASSWORD") or "")
    credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "")
    host = db.get("HOST") or ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    url = f"postgres://{credentials}@{quote(host, safe='')}{port}/{database.name}"
    if not host:  # the server's default socket directory (a host of "" in the URL means it too)
        url = f"postgres://{credentials}@/{database.name}"
    return {"DATABASE_URL": url}


# --- removal -------------------------------------------------------------------------------------------------------
def drop(*, deployment_id) -> None:
    """Drop the deployment's database (and role); nothing to drop is no error.

    Raises DatabaseInUse while sessions still use it: its processes must be stopped first, and a caller retries
    rather than cutting off a process that is still writing.
    """
    if _is_postgres():
        _postgres_drop(database_name(deployment_id))
    else:
        shutil.rmtree(sqlite_path(deployment_id).parent, ignore_errors=True)


def _postgres_drop(name: str) -> None:
    import psycopg
    from psycopg import sql

    try:
        with _admin_connection() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        if getattr(exc, "sqlstate", None) == _IN_USE:
            raise DatabaseInUse(f"The database {name} is still in use: {_first_line(exc)}") from None
        raise DatabaseError(f"PostgreSQL refused to drop the database {name}: {_first_line(exc)}") from None


def exists(*, deployment_id) -> bool:
    if not _is_postgres():
        return sqlite_path(deployment_id).exists()
    with _admin_connection() as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                            (database_name(deployment_id),)).fetchone() is not None

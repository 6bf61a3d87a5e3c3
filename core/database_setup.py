"""A PostgreSQL database that does not exist, said in one line with the command that creates it.

A first `manage.py migrate` (or `scripts/serve.sh`) against a `DATABASE_URL` whose database was never created would
otherwise end in psycopg's twenty-line traceback, its one useful line last. manage.py asks this module about the
OperationalError that ends a command; nothing here runs per request.
"""

from __future__ import annotations

import re
import shlex

MISSING_DATABASE = re.compile(r'database "(?P<name>[^"]+)" does not exist')


def missing_database_message(exc: BaseException, database: dict) -> str | None:
    """The one-line message for `exc` when it says `database` (a DATABASES entry) does not exist; None otherwise."""
    match = MISSING_DATABASE.search(str(exc))
    if match is None or "postgresql" not in str(database.get("ENGINE", "")):
        return None
    name = match.group("name")
    host, port = database.get("HOST") or "localhost", database.get("PORT") or 5432
    where = ["-h", str(host), "-p", str(port)] + (["-U", str(database["USER"])] if database.get("USER") else [])
    createdb = shlex.join(["createdb", *where, name])
    create = name.replace('"', '""')
    psql = shlex.join(["psql", *where, "-d", "postgres", "-c", f'CREATE DATABASE "{create}"'])
    return (f'The PostgreSQL database "{name}" (DATABASE_URL) does not exist on {host}:{port}. Create it with: '
            f"{createdb}   (or: {psql}), then run the command again.")

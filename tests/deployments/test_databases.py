"""Each deployment's own database: created once before its first revision starts, named from its id, closed to other
deployments, adopted from an older version's per-revision file, and dropped with the deployment. On the PostgreSQL
pass these create and drop real databases and roles on the test server."""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from django.db import connection

from deployments import databases, pipeline, services
from deployments.models import Deployment, Revision
from tests.deployments.test_pipeline import logs

pytestmark = pytest.mark.django_db(transaction=True)


def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def deployment_id(deploy_settings):
    """A deployment id whose database, if a test leaves one, is dropped afterwards."""
    new_id = uuid.uuid4()
    yield new_id
    databases.drop(deployment_id=new_id)


def admin_query(sql: str, *params):
    with databases._admin_connection() as conn:
        return conn.execute(sql, params).fetchall()


def test_a_deployment_database_is_created_once_and_a_second_call_changes_nothing(deployment_id):
    first = databases.ensure(deployment_id=deployment_id, password="first-password")
    second = databases.ensure(deployment_id=deployment_id, password="first-password")
    assert first == second
    assert databases.exists(deployment_id=deployment_id)
    if on_postgres():
        assert first.name == f"deployment_{deployment_id.hex}" and first.role == first.name
        owner = admin_query("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", first.name)
        assert owner == [(first.role,)]
    else:
        assert first.name.endswith(f"databases/{deployment_id}/db.sqlite3")
        with sqlite3.connect(first.name) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_dropped_deployment_database_is_gone_and_dropping_again_is_no_error(deployment_id):
    databases.ensure(deployment_id=deployment_id, password="pw")
    databases.drop(deployment_id=deployment_id)
    assert not databases.exists(deployment_id=deployment_id)
    databases.drop(deployment_id=deployment_id)
    if on_postgres():
        assert admin_query("SELECT 1 FROM pg_roles WHERE rolname = %s", databases.database_name(deployment_id)) == []


def test_the_serving_process_connects_with_the_deployment_s_own_role_and_no_other_role_may(deployment_id):
    if not on_postgres():
        pytest.skip("roles exist on PostgreSQL only")
    import psycopg

    database = databases.ensure(deployment_id=deployment_id, password="pw")
    url = databases.connection_env(database)["DATABASE_URL"]
    with psycopg.connect(url, connect_timeout=5) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == (database.role, database.name)
    other = uuid.uuid4()
    try:
        stranger = databases.ensure(deployment_id=other, password="pw2")
        stranger_url = databases.connection_env(stranger)["DATABASE_URL"].rsplit("/", 1)[0] + f"/{database.name}"
        with pytest.raises(psycopg.OperationalError, match="permission denied"):
            psycopg.connect(stranger_url, connect_timeout=5).close()
    finally:
        databases.drop(deployment_id=other)


def test_a_database_name_taken_by_another_owner_is_refused_with_the_reason(deployment_id):
    if not on_postgres():
        pytest.skip("owners exist on PostgreSQL only")
    name = databases.database_name(deployment_id)
    with databases._admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # owned by the service's user, not the deployment's role
    with pytest.raises(databases.DatabaseError, match="taken by another owner"):
        databases.ensure(deployment_id=deployment_id, password="pw")


def test_a_database_that_cannot_be_created_fails_the_deploy_with_the_reason_and_a_retry_works(
        internal_deployment, run_jobs, settings):
    deployment = internal_deployment()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    if on_postgres():
        # The name is taken: a database of that name owned by another role (the service's user) exists.
        name = databases.database_name(uuid.UUID(deployment["id"]))
        with databases._admin_connection() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    else:
        # The databases folder is a file: the disk refuses to create the database there.
        settings.DEPLOY_ROOT.mkdir(parents=True, exist_ok=True)
        (settings.DEPLOY_ROOT / "databases").write_text("not a folder")
    run_jobs()
    revision.refresh_from_db()
    assert revision.status == "DEPLOY_FAILED"
    assert "database" in revision.status_message, revision.status_message
    failed = Deployment.objects.get(id=deployment["id"])
    assert failed.database_name == "" and failed.status == "AWAITING_DATABASE"

    if on_postgres():
        databases._postgres_drop(databases.database_name(failed.id))
    else:
        (settings.DEPLOY_ROOT / "databases").unlink()
    retried = services.revision_redeploy(deployment=failed, revision=revision)
    run_jobs()
    latest = Revision.objects.get(id=retried.latest_revision_id)
    assert latest.status == "DEPLOYED", logs(latest.id)
    retried.refresh_from_db()
    assert retried.database_name and retried.status == "READY"
    pipeline.get_runner().stop(latest)
    databases.drop(deployment_id=retried.id)


def test_every_revision_serves_from_the_one_database_created_before_the_first(internal_deployment, run_jobs):
    deployment = internal_deployment()
    run_jobs()
    first = Revision.objects.get(id=deployment["latest_revision_id"])
    created = Deployment.objects.get(id=deployment["id"])
    assert first.status == "DEPLOYED" and created.status == "READY"
    assert "Created the deployment's" in logs(first.id, "deploy")
    second = services.revision_redeploy(deployment=created, revision=first)
    run_jobs()
    latest = Revision.objects.get(id=second.latest_revision_id)
    assert latest.status == "DEPLOYED", logs(latest.id)
    assert Deployment.objects.get(id=deployment["id"]).database_name == created.database_name
    assert "Created the deployment's" not in logs(latest.id, "deploy")
    assert "drained and stopped" in logs(first.id, "deploy")
    pipeline.get_runner().stop(latest)
    databases.drop(deployment_id=created.id)


def test_an_older_revision_s_own_sqlite_file_becomes_the_deployment_s_database(internal_deployment, run_jobs):
    if on_postgres():
        pytest.skip("an older version's per-revision file is adopted on SQLite only (docs/deployments.md)")
    deployment = internal_deployment()
    run_jobs()
    revision = Revision.objects.get(id=deployment["latest_revision_id"])
    runner = pipeline.get_runner()
    runner.stop(revision)
    # What an older version left: no database recorded, the data in the revision's own folder.
    served = Deployment.objects.get(id=deployment["id"])
    legacy = runner.dirs(revision).data / "db.sqlite3"
    databases.sqlite_path(served.id).replace(legacy)
    Deployment.objects.filter(id=served.id).update(database_name="", database_role="", database_password="")
    with sqlite3.connect(legacy) as db:
        db.execute("CREATE TABLE legacy_marker (note TEXT)")
        db.execute("INSERT INTO legacy_marker VALUES ('kept')")

    services.deployment_database_ensure(deployment=Deployment.objects.get(id=served.id))
    adopted = Deployment.objects.get(id=served.id).database_name
    with sqlite3.connect(adopted) as db:
        assert db.execute("SELECT note FROM legacy_marker").fetchall() == [("kept",)]
    databases.drop(deployment_id=served.id)


def test_deleting_a_deployment_drops_its_database(internal_deployment, run_jobs):
    deployment = internal_deployment()
    run_jobs()
    deployment_id = uuid.UUID(deployment["id"])
    assert databases.exists(deployment_id=deployment_id)
    services.deployment_delete(deployment=Deployment.objects.get(id=deployment_id))
    run_jobs()
    assert not Deployment.objects.filter(id=deployment_id).exists()
    assert not databases.exists(deployment_id=deployment_id)


def test_a_database_still_in_use_is_not_dropped_and_the_teardown_comes_back_later(deployment_id, settings):
    if not on_postgres():
        pytest.skip("sessions of other processes are visible on PostgreSQL only")
    import psycopg

    database = databases.ensure(deployment_id=deployment_id, password="pw")
    with psycopg.connect(databases.connection_env(database)["DATABASE_URL"]) as still_connected:
        with pytest.raises(databases.DatabaseInUse):
            databases.drop(deployment_id=deployment_id)
        assert still_connected.execute("SELECT 1").fetchone() == (1,)
    databases.drop(deployment_id=deployment_id)
    assert not databases.exists(deployment_id=deployment_id)

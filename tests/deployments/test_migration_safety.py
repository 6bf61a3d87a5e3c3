"""A revision migrates its deployment's database while the previous revision still serves from it, so the runtime's
migrations only add: no table or column the old code reads is removed or renamed, and a new column has a default
or accepts null, so the old code's inserts (which do not name it) still work (docs/deployments.md)."""

from __future__ import annotations

import pytest
from django.db import migrations
from django.db.migrations.loader import MigrationLoader
from django.db.models.fields import NOT_PROVIDED

from deployments.serving import settings as serving_settings

# What the old code could no longer read or write once applied.
REMOVING = (migrations.RemoveField, migrations.DeleteModel, migrations.RenameField, migrations.RenameModel,
            migrations.AlterModelTable, migrations.RunSQL)


def served_apps() -> set[str]:
    """The labels of the project's apps a revision's serving process installs (Django's own are stable)."""
    labels = {name.split(".")[0] for name in serving_settings.INSTALLED_APPS}
    return labels - {"django", "rest_framework", "drf_spectacular", "drf_spectacular_sidecar", "channels",
                     "deployments"}


def database_operations(operation):
    """The operations that change the database (a SeparateDatabaseAndState's state-only half changes nothing)."""
    if isinstance(operation, migrations.SeparateDatabaseAndState):
        for inner in operation.database_operations:
            yield from database_operations(inner)
    else:
        yield operation


def unsafe(operation) -> str | None:
    if isinstance(operation, REMOVING):
        return f"{type(operation).__name__} removes or renames what a running revision may still use"
    if isinstance(operation, migrations.AddField):
        field = operation.field
        if not (field.null or field.has_default() or field.db_default is not NOT_PROVIDED):
            return f"AddField {operation.name} has neither a default nor null: the old code's inserts would fail"
    return None


@pytest.mark.django_db
def test_the_runtime_s_migrations_only_add_so_a_previous_revision_keeps_serving_while_they_apply():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    apps = served_apps()
    assert {"chat", "agentserver", "accounts", "core"} <= apps
    problems = []
    for (app, name), migration in loader.disk_migrations.items():
        if app not in apps or name.startswith("0001_"):
            continue  # a first migration creates the app's tables: nothing older reads them
        created = {op.name.lower() for op in migration.operations if isinstance(op, migrations.CreateModel)}
        for operation in migration.operations:
            for applied in database_operations(operation):
                if getattr(applied, "model_name", None) in created:
                    continue  # a field of a table this migration creates: no old code reads it
                reason = unsafe(applied)
                if reason:
                    problems.append(f"{app}.{name}: {reason}")
    assert problems == []


def test_a_removal_a_rename_and_a_mandatory_new_column_are_each_reported():
    from django.db import models

    assert unsafe(migrations.RemoveField("chatrun", "error"))
    assert unsafe(migrations.RenameField("chatrun", "error", "reason"))
    assert unsafe(migrations.SeparateDatabaseAndState(database_operations=[migrations.DeleteModel("x")]).
                  database_operations[0])
    assert unsafe(migrations.AddField("chatrun", "note", models.TextField()))
    assert unsafe(migrations.AddField("chatrun", "note", models.TextField(default=""))) is None
    assert unsafe(migrations.AddField("chatrun", "note", models.TextField(null=True))) is None

"""Create the database cache table (the default cache, shared by all processes)."""

from __future__ import annotations

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

CACHE_TABLE = "service_cache"


def create_cache_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, CACHE_TABLE, False)


def drop_cache_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(CACHE_TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("core", "0001_initial")]
    operations = [migrations.RunPython(create_cache_table, drop_cache_table)]

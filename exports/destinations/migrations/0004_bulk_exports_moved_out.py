"""Bulk exports and their export runs moved to the `bulk_exports` app: Django's state forgets them here.

Nothing happens in the database: the tables stay, and bulk_exports' 0001 (which runs after this one) takes
them over under their old names.
"""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0003_destination_validation_failure'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='BulkExportRun'),
                migrations.DeleteModel(name='BulkExport'),
            ],
            database_operations=[],
        ),
    ]

"""Bulk exports and their export runs, taken over from the `exports` app (now destinations) with their tables.

The tables exist already (exports 0002 created them): only Django's state learns the models here, under their
old table names. Their content types are relabelled from `exports` to `bulk_exports` so that permissions and
admin history follow them.
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MODELS = ['bulkexport', 'bulkexportrun']


def relabel_content_types(old_label, new_label):
    def relabel(apps, schema_editor):
        content_types = apps.get_model('contenttypes', 'ContentType').objects.using(schema_editor.connection.alias)
        for model in MODELS:
            if not content_types.filter(app_label=new_label, model=model).exists():
                content_types.filter(app_label=old_label, model=model).update(app_label=new_label)
    return relabel


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0001_initial'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('exports', '0004_bulk_exports_moved_out'),
        ('tracing', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='BulkExport',
                    fields=[
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('start_time', models.DateTimeField()),
                        ('end_time', models.DateTimeField(blank=True, null=True)),
                        ('filter', models.TextField(blank=True, null=True)),
                        ('format', models.CharField(default='Parquet', max_length=16)),
                        ('format_version', models.CharField(choices=[('v1', 'V1'), ('v2_beta', 'V2 Beta')], default='v1', max_length=16)),
                        ('compression', models.CharField(choices=[('none', 'None'), ('gzip', 'Gzip'), ('snappy', 'Snappy'), ('zstandard', 'Zstandard')], default='gzip', max_length=16)),
                        ('interval_hours', models.PositiveSmallIntegerField(blank=True, null=True)),
                        ('export_fields', models.JSONField(blank=True, null=True)),
                        ('status', models.CharField(choices=[('Created', 'Created'), ('Running', 'Running'), ('Completed', 'Completed'), ('Failed', 'Failed'), ('Cancelled', 'Cancelled'), ('TimedOut', 'Timed Out'), ('IntervalScheduled', 'Interval Scheduled')], default='Created', max_length=24)),
                        ('next_window', models.PositiveIntegerField(default=0)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('destination', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='bulk_exports', to='exports.destination')),
                        ('session', models.ForeignKey(help_text='The tracing project (a session on the wire).', on_delete=django.db.models.deletion.CASCADE, related_name='bulk_exports', to='tracing.tracingproject')),
                        ('source_bulk_export', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='children', to='bulk_exports.bulkexport')),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='bulk_exports', to='accounts.workspace')),
                    ],
                    options={
                        'db_table': 'exports_bulkexport',
                        'ordering': ['-created_at', 'id'],
                        'indexes': [
                            models.Index(fields=['workspace', 'created_at'], name='exports_bulk_ws_idx'),
                            models.Index(fields=['status'], name='exports_bulk_status_idx'),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name='BulkExportRun',
                    fields=[
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('start_time', models.DateTimeField()),
                        ('end_time', models.DateTimeField()),
                        ('status', models.CharField(choices=[('Created', 'Created'), ('Running', 'Running'), ('Completed', 'Completed'), ('Failed', 'Failed'), ('Cancelled', 'Cancelled'), ('TimedOut', 'Timed Out')], default='Created', max_length=24)),
                        ('retry_number', models.PositiveIntegerField(default=0)),
                        ('errors', models.JSONField(blank=True, null=True)),
                        ('job_id', models.UUIDField(blank=True, help_text='The queued job that works on this export run.', null=True)),
                        ('attempt_token', models.UUIDField(blank=True, editable=False, null=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('rows_written', models.BigIntegerField(default=0)),
                        ('exported_files', models.JSONField(blank=True, default=list)),
                        ('latest_cursor', models.CharField(blank=True, max_length=128, null=True)),
                        ('pending_key', models.TextField(blank=True, null=True)),
                        ('pending_upload_id', models.TextField(blank=True, null=True)),
                        ('bulk_export', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='export_runs', to='bulk_exports.bulkexport')),
                        ('credential_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='export_runs', to='exports.credentialversion')),
                    ],
                    options={
                        'db_table': 'exports_bulkexportrun',
                        'ordering': ['start_time', 'id'],
                        'indexes': [
                            models.Index(fields=['bulk_export', 'start_time'], name='exports_run_export_idx'),
                            models.Index(fields=['status'], name='exports_run_status_idx'),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(relabel_content_types('exports', 'bulk_exports'),
                             relabel_content_types('bulk_exports', 'exports')),
    ]

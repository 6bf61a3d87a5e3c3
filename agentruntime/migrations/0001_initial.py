"""The agent runtime's models, which were the chat app's until its migration 0012: created in Django's state only,
on the tables chat's migrations 0001-0011 made and filled (db_table keeps their `chat_` names). Nothing is copied
or rebuilt, so a database of any size upgrades at once, and the rows stay as they were.

The content types follow the models (their admin history and permissions with them); on a new database there
are none yet, and Django creates the runtime's after migrating."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MOVED = ('chatthread', 'chatrun', 'chatinterrupt', 'chatevent', 'checkpoint', 'checkpointblob', 'checkpointwrite', 'storeitem', 'storevector')


def content_types_to(app_label: str, from_label: str):
    def move(apps, schema_editor):
        content_type = apps.get_model("contenttypes", "ContentType")
        content_type.objects.filter(app_label=from_label, model__in=MOVED).update(app_label=app_label)

    return move


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('chat', '0011_run_kind_choices'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('accounts', '0002_api_key_home_workspace'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ChatThread',
                    fields=[
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('id', models.CharField(max_length=255, primary_key=True, serialize=False)),
                        ('owner_kind', models.CharField(choices=[('workspace', 'Workspace'), ('user', 'User'), ('anonymous', 'Anonymous')], max_length=16)),
                        ('title', models.CharField(blank=True, max_length=200)),
                        ('graph_name', models.CharField(blank=True, default='', max_length=255)),
                        ('has_state', models.BooleanField(default=False)),
                        ('last_seq', models.BigIntegerField(default=0)),
                        ('expired_through_seq', models.BigIntegerField(default=0)),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('ttl', models.JSONField(blank=True, null=True)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='chat_threads', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='chat_threads', to='accounts.workspace')),
                    ],
                    options={
                        'db_table': 'chat_chatthread',
                    },
                ),
                migrations.CreateModel(
                    name='ChatRun',
                    fields=[
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('id', models.UUIDField(primary_key=True, serialize=False)),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('completed', 'Completed'), ('failed', 'Failed'), ('interrupted', 'Interrupted')], default='running', max_length=16)),
                        ('error', models.TextField(blank=True)),
                        ('worker', models.CharField(blank=True, max_length=255)),
                        ('worker_instance', models.CharField(blank=True, default='', max_length=255)),
                        ('heartbeat_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('start_seq', models.BigIntegerField(default=0)),
                        ('cancel_requested_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('kind', models.CharField(choices=[('protocol', 'Protocol'), ('agent_server', 'Agent Server')], default='protocol', max_length=16)),
                        ('graph_name', models.CharField(blank=True, default='', max_length=255)),
                        ('assistant_id', models.CharField(blank=True, default='', max_length=64)),
                        ('kwargs', models.JSONField(blank=True, default=dict)),
                        ('metadata', models.JSONField(blank=True, default=dict)),
                        ('multitask_strategy', models.CharField(blank=True, default='', max_length=16)),
                        ('available_at', models.DateTimeField(blank=True, null=True)),
                        ('attempt', models.PositiveSmallIntegerField(default=1)),
                        ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='agentruntime.chatthread')),
                    ],
                    options={
                        'db_table': 'chat_chatrun',
                    },
                ),
                migrations.CreateModel(
                    name='ChatInterrupt',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('interrupt_id', models.CharField(max_length=255)),
                        ('namespace', models.TextField(default='[]')),
                        ('response', models.JSONField(blank=True, null=True)),
                        ('answered_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='answered_interrupts', to='agentruntime.chatrun')),
                        ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='interrupts', to='agentruntime.chatthread')),
                    ],
                    options={
                        'db_table': 'chat_chatinterrupt',
                    },
                ),
                migrations.CreateModel(
                    name='ChatEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('seq', models.BigIntegerField()),
                        ('channel', models.CharField(max_length=255)),
                        ('namespace', models.TextField(default='[]')),
                        ('payload', models.TextField()),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='agentruntime.chatrun')),
                        ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='agentruntime.chatthread')),
                    ],
                    options={
                        'db_table': 'chat_chatevent',
                    },
                ),
                migrations.CreateModel(
                    name='Checkpoint',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('thread_id', models.CharField(max_length=255)),
                        ('checkpoint_ns', models.TextField(blank=True, default='')),
                        ('checkpoint_id', models.CharField(max_length=64)),
                        ('parent_checkpoint_id', models.CharField(blank=True, max_length=64, null=True)),
                        ('run_id', models.CharField(blank=True, db_index=True, max_length=255, null=True)),
                        ('type', models.CharField(max_length=32)),
                        ('checkpoint', models.BinaryField()),
                        ('metadata', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'chat_checkpoint',
                        'constraints': [models.UniqueConstraint(fields=('thread_id', 'checkpoint_ns', 'checkpoint_id'), name='chat_checkpoint_unique')],
                    },
                ),
                migrations.CreateModel(
                    name='CheckpointBlob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('thread_id', models.CharField(max_length=255)),
                        ('checkpoint_ns', models.TextField(blank=True, default='')),
                        ('channel', models.TextField()),
                        ('version', models.CharField(max_length=64)),
                        ('type', models.CharField(max_length=32)),
                        ('blob', models.BinaryField(null=True)),
                    ],
                    options={
                        'db_table': 'chat_checkpointblob',
                        'constraints': [models.UniqueConstraint(fields=('thread_id', 'checkpoint_ns', 'channel', 'version'), name='chat_checkpointblob_unique')],
                    },
                ),
                migrations.CreateModel(
                    name='CheckpointWrite',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('thread_id', models.CharField(max_length=255)),
                        ('checkpoint_ns', models.TextField(blank=True, default='')),
                        ('checkpoint_id', models.CharField(max_length=64)),
                        ('task_id', models.CharField(max_length=255)),
                        ('task_path', models.TextField(blank=True, default='')),
                        ('idx', models.IntegerField()),
                        ('channel', models.TextField()),
                        ('type', models.CharField(max_length=32)),
                        ('blob', models.BinaryField()),
                    ],
                    options={
                        'db_table': 'chat_checkpointwrite',
                        'constraints': [models.UniqueConstraint(fields=('thread_id', 'checkpoint_ns', 'checkpoint_id', 'task_id', 'idx'), name='chat_checkpointwrite_unique')],
                    },
                ),
                migrations.CreateModel(
                    name='StoreItem',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('scope', models.CharField(max_length=255)),
                        ('namespace', models.TextField()),
                        ('key', models.TextField()),
                        ('value', models.JSONField()),
                        ('created_at', models.DateTimeField()),
                        ('updated_at', models.DateTimeField()),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('ttl_minutes', models.FloatField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'chat_storeitem',
                        'indexes': [models.Index(fields=['scope', 'updated_at', 'id'], name='chat_storeitem_recent'), models.Index(condition=models.Q(('expires_at__isnull', False)), fields=['expires_at'], name='chat_storeitem_expires')],
                        'constraints': [models.UniqueConstraint(fields=('scope', 'namespace', 'key'), name='chat_storeitem_unique')],
                    },
                ),
                migrations.CreateModel(
                    name='StoreVector',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('field', models.TextField()),
                        ('vector', models.BinaryField()),
                        ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='vectors', to='agentruntime.storeitem')),
                    ],
                    options={
                        'db_table': 'chat_storevector',
                    },
                ),
                migrations.AddIndex(
                    model_name='chatthread',
                    index=models.Index(fields=['owner_kind', 'workspace', 'user', '-updated_at'], name='chat_thread_owner_idx'),
                ),
                migrations.AddIndex(
                    model_name='chatthread',
                    index=models.Index(fields=['expires_at'], name='chat_thread_expiry_idx'),
                ),
                migrations.AddConstraint(
                    model_name='chatthread',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('owner_kind', 'workspace'), ('user__isnull', True), ('workspace__isnull', False)), models.Q(('owner_kind', 'user'), ('user__isnull', False), ('workspace__isnull', True)), models.Q(('owner_kind', 'anonymous'), ('user__isnull', True), ('workspace__isnull', True)), _connector='OR'), name='chat_thread_owner_consistent'),
                ),
                migrations.AddIndex(
                    model_name='chatrun',
                    index=models.Index(fields=['status', 'heartbeat_at'], name='chat_run_sweep_idx'),
                ),
                migrations.AddIndex(
                    model_name='chatrun',
                    index=models.Index(fields=['status', 'created_at'], name='chat_run_queue_idx'),
                ),
                migrations.AddIndex(
                    model_name='chatrun',
                    index=models.Index(fields=['worker', 'status'], name='chat_run_worker_idx'),
                ),
                migrations.AddConstraint(
                    model_name='chatrun',
                    constraint=models.UniqueConstraint(condition=models.Q(('status', 'running')), fields=('thread',), name='chat_run_one_active_per_thread'),
                ),
                migrations.AddConstraint(
                    model_name='chatinterrupt',
                    constraint=models.UniqueConstraint(fields=('thread', 'interrupt_id'), name='chat_interrupt_unique'),
                ),
                migrations.AddConstraint(
                    model_name='chatevent',
                    constraint=models.UniqueConstraint(fields=('thread', 'seq'), name='chat_event_thread_seq'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_to('agentruntime', 'chat'), content_types_to('chat', 'agentruntime')),
    ]

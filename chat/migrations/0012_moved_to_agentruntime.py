"""The chat's models moved to the agent runtime (agentruntime/migrations/0001_initial.py): removed from the chat
app's state only. Their tables, with every row, stay where they are; the runtime's models name them (db_table)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('chat', '0011_run_kind_choices'),
        ('agentruntime', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='chatevent',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='chatevent',
                    name='thread',
                ),
                migrations.RemoveField(
                    model_name='chatinterrupt',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='chatinterrupt',
                    name='thread',
                ),
                migrations.RemoveField(
                    model_name='chatrun',
                    name='thread',
                ),
                migrations.RemoveField(
                    model_name='chatthread',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='chatthread',
                    name='workspace',
                ),
                migrations.DeleteModel(
                    name='Checkpoint',
                ),
                migrations.DeleteModel(
                    name='CheckpointBlob',
                ),
                migrations.DeleteModel(
                    name='CheckpointWrite',
                ),
                migrations.RemoveField(
                    model_name='storevector',
                    name='item',
                ),
                migrations.DeleteModel(
                    name='ChatEvent',
                ),
                migrations.DeleteModel(
                    name='ChatInterrupt',
                ),
                migrations.DeleteModel(
                    name='ChatRun',
                ),
                migrations.DeleteModel(
                    name='ChatThread',
                ),
                migrations.DeleteModel(
                    name='StoreItem',
                ),
                migrations.DeleteModel(
                    name='StoreVector',
                ),
            ],
            database_operations=[],
        ),
    ]

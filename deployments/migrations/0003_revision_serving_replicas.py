"""A revision is served by several processes (resource_spec.min_scale): their ports and pids move to one list, the
existing single process becoming replica 0, so that an upgrade finds and stops what an older version started."""

from django.db import migrations, models


def single_to_replicas(apps, schema_editor):
    Revision = apps.get_model("deployments", "Revision")
    for revision in Revision.objects.exclude(serving_port=None).only("id", "serving_port", "serving_pid"):
        Revision.objects.filter(id=revision.id).update(
            serving_replicas=[{"port": revision.serving_port, "pid": revision.serving_pid}])


def replicas_to_single(apps, schema_editor):
    Revision = apps.get_model("deployments", "Revision")
    for revision in Revision.objects.exclude(serving_replicas=[]).only("id", "serving_replicas"):
        first = revision.serving_replicas[0] or {}
        Revision.objects.filter(id=revision.id).update(serving_port=first.get("port"), serving_pid=first.get("pid"))


class Migration(migrations.Migration):

    dependencies = [
        ('deployments', '0002_deployment_database'),
    ]

    operations = [
        migrations.AddField(
            model_name='revision',
            name='serving_replicas',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(single_to_replicas, replicas_to_single),
        migrations.RemoveField(
            model_name='revision',
            name='serving_pid',
        ),
        migrations.RemoveField(
            model_name='revision',
            name='serving_port',
        ),
    ]

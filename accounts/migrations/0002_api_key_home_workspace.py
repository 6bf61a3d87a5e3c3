import django.db.models.deletion
from django.db import migrations, models


def home_of_single_workspace_keys(apps, schema_editor):
    """A key with one workspace resolves to it without X-Tenant-Id already: that is its home. A key with several
    stays as it was (it names its workspace on every call)."""
    ApiKey = apps.get_model("accounts", "ApiKey")
    for key in ApiKey.objects.prefetch_related("workspaces"):
        workspaces = list(key.workspaces.all())
        if len(workspaces) == 1:
            ApiKey.objects.filter(pk=key.pk).update(home_workspace=workspaces[0])


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="home_workspace",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="+", to="accounts.workspace"),
        ),
        migrations.RunPython(home_of_single_workspace_keys, migrations.RunPython.noop),
    ]

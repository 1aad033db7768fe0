"""The nightly judge recalibration moved from ``caching.tasks`` to ``modelbuild.tasks``: a periodic
task created before keeps its row (staff may have changed its time) and now names the new task."""
from django.db import migrations

OLD, NEW = "caching.tasks.judge_recalibrate_tenants", "modelbuild.tasks.judge_recalibrate_tenants"


def rename(apps, schema_editor, old=OLD, new=NEW):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(task=old).update(task=new)


def rename_back(apps, schema_editor):
    rename(apps, schema_editor, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(rename, rename_back)]

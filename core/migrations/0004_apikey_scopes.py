"""API keys get scopes (issue 29, second security review). Every existing key keeps what it could
do: ask and mint customer tokens, plus ``timings`` where staff had granted the timing breakdown."""
import django.contrib.postgres.fields
from django.db import migrations, models

import core.models


def scopes_from_breakdown(apps, schema_editor):
    TenantApiKey = apps.get_model("core", "TenantApiKey")
    TenantApiKey.objects.filter(timing_breakdown=True).update(scopes=["ask", "customer_token", "timings"])


def breakdown_from_scopes(apps, schema_editor):
    TenantApiKey = apps.get_model("core", "TenantApiKey")
    TenantApiKey.objects.filter(scopes__contains=["timings"]).update(timing_breakdown=True)


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0003_tenant_cache_budgets"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenantapikey",
            name="scopes",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(choices=[("ask", "Ask questions and send feedback"),
                                                     ("customer_token", "Mint customer tokens"),
                                                     ("timings", "See the per-step timings")], max_length=20),
                blank=True, default=core.models.api_key_default_scopes,
                help_text="What the key may do: ask (the Ask API and feedback), customer_token (mint customer "
                          "tokens), timings (answers carry the per-step timings, which caches answered: staff "
                          "tools only).",
                size=None),
        ),
        migrations.RunPython(scopes_from_breakdown, breakdown_from_scopes),
        migrations.RemoveField(model_name="tenantapikey", name="timing_breakdown"),
    ]

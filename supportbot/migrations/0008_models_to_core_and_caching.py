"""Tenant, TenantApiKey and StaffMembership left for ``core``, AskEvent for ``caching``: state only, the tables stay."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('caching', '0009_askevent_here_tenant_to_core'),
        ('ingestion', '0004_tenant_and_jobrun_to_core'),
        ('retrieval', '0002_tenant_to_core'),
        ('supportbot', '0007_judge_product'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='staffmembership',
                name='tenant',
            ),
            migrations.RemoveField(
                model_name='staffmembership',
                name='user',
            ),
            migrations.RemoveField(
                model_name='tenantapikey',
                name='tenant',
            ),
            migrations.DeleteModel(
                name='AskEvent',
            ),
            migrations.DeleteModel(
                name='StaffMembership',
            ),
            migrations.DeleteModel(
                name='Tenant',
            ),
            migrations.DeleteModel(
                name='TenantApiKey',
            ),
        ]),
    ]

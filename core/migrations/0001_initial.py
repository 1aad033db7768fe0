"""Tenant, TenantApiKey, StaffMembership (from ``supportbot``) and JobRun (from ``ingestion``) move to
``core`` without moving data: the tables keep their names (``db_table``), so only Django's state
changes. The content types (and with them every permission and group grant) are relabelled."""
import core.models
import django.contrib.postgres.fields
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from core.migration_ops import content_types_relabel


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('supportbot', '0007_judge_product'),
        ('ingestion', '0003_chunk_search_vector'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Tenant',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('slug', models.SlugField(unique=True)),
                    ('name', models.CharField(max_length=200)),
                    ('locales', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=10), default=list, size=None)),
                    ('default_locale', models.CharField(default='en', max_length=10)),
                    ('instructions', models.TextField(blank=True, help_text='Static instructions placed in the prompt prefix.')),
                    ('few_shot', models.JSONField(blank=True, default=list, help_text='[{"question": ..., "answer": ...}]')),
                    ('policy_version', models.PositiveIntegerField(default=1, help_text='Bump when a policy changes: every older cached answer becomes unreachable at once.')),
                    ('semantic_mode', models.CharField(choices=[('off', 'Off'), ('shadow', 'Shadow (decide and record, serve fresh)'), ('serve', 'Serve'), ('assist', 'Assist (near hits become model context)')], default='shadow', max_length=10)),
                    ('handoff_text', models.CharField(blank=True, help_text='How a customer reaches a human, shown with fallbacks.', max_length=300)),
                    ('embed_origins', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=200, validators=[core.models.validate_origin]), blank=True, default=list, help_text="Origins of the tenant's own sites (https://shop.example) whose pages may sign a customer in to the chat page by posting a customer token (supportbot.auth).", size=None)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                ],
                options={
                    'db_table': 'supportbot_tenant',
                    'ordering': ['slug'],
                    'permissions': [('change_semantic_mode', 'Can switch the semantic cache mode')],
                },
            ),
            migrations.CreateModel(
                name='JobRun',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('job', models.CharField(db_index=True, max_length=100)),
                    ('status', models.CharField(choices=[('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('skipped', 'Skipped')], db_index=True, default='running', max_length=10)),
                    ('task_id', models.CharField(blank=True, help_text='Celery task id, when run by a worker', max_length=100)),
                    ('attempt', models.PositiveIntegerField(default=1)),
                    ('started_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('scanned', models.PositiveIntegerField(default=0, help_text='items looked at (e.g. current chunks)')),
                    ('changed', models.PositiveIntegerField(default=0, help_text='items found new or changed')),
                    ('embedded', models.PositiveIntegerField(default=0, help_text='texts sent through the embedding model')),
                    ('cache_hits', models.PositiveIntegerField(default=0, help_text='vectors served by the embedding cache')),
                    ('removed', models.PositiveIntegerField(default=0, help_text='stale vectors or entries removed')),
                    ('duration_s', models.FloatField(default=0)),
                    ('progress_done', models.PositiveIntegerField(default=0)),
                    ('progress_total', models.PositiveIntegerField(default=0)),
                    ('detail', models.JSONField(blank=True, default=dict)),
                    ('error', models.TextField(blank=True)),
                ],
                options={
                    'db_table': 'ingestion_jobrun',
                    'ordering': ['-started_at'],
                    'indexes': [models.Index(fields=['job', 'status', 'started_at'], name='ingestion_j_job_9c36e3_idx')],
                },
            ),
            migrations.CreateModel(
                name='TenantApiKey',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(help_text="What the key is for, e.g. 'web shop backend'.", max_length=100)),
                    ('prefix', models.CharField(editable=False, max_length=16, unique=True)),
                    ('key_hash', models.CharField(editable=False, help_text='sha256 of the whole key, hex', max_length=64)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('timing_breakdown', models.BooleanField(default=False, help_text="Answers to this key carry the per-step timings (which caches answered), not only the total. For the tenant's own diagnostics; grant it to staff tools only.")),
                    ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='core.tenant')),
                ],
                options={
                    'verbose_name': 'tenant API key',
                    'db_table': 'supportbot_tenantapikey',
                    'ordering': ['tenant', '-created_at'],
                },
            ),
            migrations.CreateModel(
                name='StaffMembership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tenant_memberships', to=settings.AUTH_USER_MODEL)),
                    ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='staff_memberships', to='core.tenant')),
                ],
                options={
                    'db_table': 'supportbot_staffmembership',
                    'ordering': ['user', 'tenant'],
                    'permissions': [('view_all_tenants', 'Sees and acts on every tenant (platform staff)')],
                    'constraints': [models.UniqueConstraint(fields=('user', 'tenant'), name='staff_membership_unique')],
                },
            ),
        ]),
        content_types_relabel({"supportbot": ("tenant", "tenantapikey", "staffmembership"), "ingestion": ("jobrun",)}, "core"),
    ]

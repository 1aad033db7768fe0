"""AskEvent moves here from ``supportbot`` (the record of an Ask sits with its cache decisions, so the
caching models reference nothing above them), and every tenant foreign key points at ``core.Tenant``.
State only: the tables keep their names; the AskEvent content type is relabelled."""
import django.db.models.deletion
import uuid
from django.db import migrations, models

from core.migration_ops import content_types_relabel


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('supportbot', '0007_judge_product'),
        ('caching', '0008_judge_product'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='cachechurn',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='cachedecision',
                name='tenant',
                field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='hourlyrollup',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='judgethreshold',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='labeledpair',
                name='tenant',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='pairverification',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='purgerecord',
                name='tenant',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='reviewitem',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='sampledhit',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='core.tenant'),
            ),
            migrations.AlterField(
                model_name='semanticentry',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='semantic_entries', to='core.tenant'),
            ),
            migrations.CreateModel(
                name='AskEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('request_id', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                    ('locale', models.CharField(max_length=10)),
                    ('scope', models.CharField(default='anonymous', help_text='anonymous or customer', max_length=20)),
                    ('customer_ref', models.CharField(blank=True, max_length=128)),
                    ('question', models.TextField()),
                    ('normalized_question', models.TextField(blank=True)),
                    ('answer', models.TextField(blank=True)),
                    ('citations', models.JSONField(blank=True, default=list)),
                    ('status', models.CharField(choices=[('answered', 'Answered'), ('not_covered', 'Not Covered'), ('unavailable', 'Unavailable'), ('interrupted', 'Interrupted')], max_length=20)),
                    ('serving_layer', models.CharField(choices=[('exact', 'Exact'), ('semantic', 'Semantic'), ('none', 'None')], default='none', max_length=20)),
                    ('cache_reason', models.CharField(blank=True, max_length=300)),
                    ('intent', models.CharField(blank=True, max_length=40)),
                    ('category', models.CharField(blank=True, help_text='general, personal, action or time', max_length=20)),
                    ('model', models.CharField(blank=True, max_length=200)),
                    ('model_revision', models.CharField(blank=True, max_length=100)),
                    ('prompt_version', models.CharField(blank=True, max_length=40)),
                    ('prompt_tokens', models.PositiveIntegerField(default=0)),
                    ('completion_tokens', models.PositiveIntegerField(default=0)),
                    ('cached_tokens', models.PositiveIntegerField(blank=True, null=True)),
                    ('finish_reason', models.CharField(blank=True, max_length=20)),
                    ('error_reason', models.CharField(blank=True, max_length=200)),
                    ('ttft_ms', models.FloatField(blank=True, null=True)),
                    ('total_ms', models.FloatField(default=0)),
                    ('timings', models.JSONField(blank=True, default=dict)),
                    ('streamed', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='asks', to='core.tenant')),
                ],
                options={
                    'db_table': 'supportbot_askevent',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.AlterField(
                model_name='cachedecision',
                name='ask',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='caching.askevent'),
            ),
            migrations.AlterField(
                model_name='feedback',
                name='ask',
                field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='caching.askevent'),
            ),
            migrations.AlterField(
                model_name='pairverification',
                name='source_ask',
                field=models.ForeignKey(blank=True, help_text='the Ask whose near miss queued the check', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='caching.askevent'),
            ),
            migrations.AlterField(
                model_name='reviewitem',
                name='ask',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='review_items', to='caching.askevent'),
            ),
            migrations.AlterField(
                model_name='semanticentry',
                name='source_ask',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='caching.askevent'),
            ),
            migrations.AddIndex(
                model_name='askevent',
                index=models.Index(fields=['tenant', 'created_at'], name='supportbot__tenant__529d0b_idx'),
            ),
            migrations.AddIndex(
                model_name='askevent',
                index=models.Index(fields=['serving_layer', 'created_at'], name='supportbot__serving_b9a21d_idx'),
            ),
            migrations.AddIndex(
                model_name='askevent',
                index=models.Index(condition=models.Q(('customer_ref', ''), _negated=True), fields=['tenant', 'customer_ref'], name='askevent_customer_idx'),
            ),
        ]),
        content_types_relabel({"supportbot": ("askevent",)}, "caching"),
    ]

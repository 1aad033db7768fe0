"""JobRun moved to ``core`` and Article.tenant points at ``core.Tenant``: state only, the tables stay."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0001_initial'),
        ('ingestion', '0003_chunk_search_vector'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(
                name='JobRun',
            ),
            migrations.AlterField(
                model_name='article',
                name='tenant',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='articles', to='core.tenant'),
            ),
        ]),
    ]

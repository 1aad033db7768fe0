"""Full-text search on chunks: the locale's text-search configuration and the vector, with a GIN index.

Existing chunks are filled with the default configurations (``german`` for de, ``english`` for en,
``simple`` otherwise); ``ingestion.textsearch.search_vectors_refresh`` re-writes them if the settings
name others."""
import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

BACKFILL = """
UPDATE ingestion_chunk AS c
   SET search_config = a.config,
       search_vector = setweight(to_tsvector(a.config::regconfig, COALESCE(c.heading, '')), 'A')
                    || setweight(to_tsvector(a.config::regconfig, COALESCE(c.text, '')), 'B')
  FROM (SELECT id, CASE split_part(lower(locale), '-', 1) WHEN 'de' THEN 'german' WHEN 'en' THEN 'english'
                   ELSE 'simple' END AS config
          FROM ingestion_article) AS a
 WHERE a.id = c.article_id
"""


class Migration(migrations.Migration):

    dependencies = [
        ('ingestion', '0002_jobrun'),
    ]

    operations = [
        migrations.AddField(
            model_name='chunk',
            name='search_config',
            field=models.CharField(blank=True, max_length=63),
        ),
        migrations.AddField(
            model_name='chunk',
            name='search_vector',
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name='chunk',
            index=django.contrib.postgres.indexes.GinIndex(fields=['search_vector'], name='chunk_search_vector_gin'),
        ),
    ]

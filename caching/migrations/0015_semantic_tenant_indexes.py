"""The semantic cache's global HNSW index gives way to one index per large tenant (caching/tenant_indexes.py).

The tenant indexes are built first, concurrently (the migration runs outside a transaction), so no large
tenant is ever without one; then the global index is dropped. Reversing builds the global index again and
drops the tenant indexes.
"""
from django.db import migrations


def build_tenant_indexes(apps, schema_editor):
    from caching import tenant_indexes

    tenant_indexes.maintain(model=apps.get_model("caching", "SemanticEntry"))


def drop_tenant_indexes(apps, schema_editor):
    from caching import tenant_indexes

    model = apps.get_model("caching", "SemanticEntry")
    for tenant_id in tenant_indexes.existing(model):
        schema_editor.remove_index(model, tenant_indexes.tenant_index(tenant_id))


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("caching", "0014_calibration_upload"),
    ]

    operations = [
        migrations.RunPython(build_tenant_indexes, drop_tenant_indexes),
        migrations.RemoveIndex(model_name="semanticentry", name="semantic_entry_hnsw"),
    ]

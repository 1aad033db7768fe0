"""The semantic cache's per-tenant HNSW indexes (``caching.tenant_indexes``) on the real PostgreSQL+pgvector:
built for tenants with enough active entries, dropped below half of it, rebuilt when invalid, and the
layer's lookups give the same nearest entries with and without them."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from caching import tenant_indexes
from caching.layers.semantic import SemanticScope, candidates, candidates_query
from caching.models import SemanticEntry
from core.models import JobRun

DIM = 384


def fill(tenant, n: int, *, seed: int, status: str = SemanticEntry.Status.ACTIVE) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(n, DIM)).astype(np.float32)]
    expires = timezone.now() + timedelta(days=1)
    SemanticEntry.objects.bulk_create(SemanticEntry(
        tenant=tenant, locale="en", question=f"question {seed}-{i}", normalized_question=f"question {seed}-{i}",
        embedding=v, embedding_model="m", embedding_version="1", answer=f"answer {i}", citations=[], intent="howto",
        signature={}, prompt_version="p", model="x", model_revision="", policy_version=1, retrieval_version="r",
        status=status, expires_at=expires) for i, v in enumerate(vectors))
    return vectors


def scope(tenant) -> SemanticScope:
    return SemanticScope(tenant_id=tenant.pk, locale="en", prompt_version="p", model="x", model_revision="",
                         policy_version=1, retrieval_version="r", embedding_model="m", embedding_version="1")


def index_defs() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
                       [SemanticEntry._meta.db_table])
        return dict(cursor.fetchall())


def test_no_index_over_every_tenant_only_the_btree(db):
    defs = index_defs()
    assert "semantic_entry_hnsw" not in defs  # the global graph is gone (migration 0015)
    assert not [n for n in defs if n.startswith(tenant_indexes.PREFIX)]  # no tenant is large yet
    assert any("tenant_id, locale, status" in d for d in defs.values())


def test_a_large_tenant_gets_its_own_index_and_lookups_give_the_same_nearest_entries(acme, initech):
    vectors = fill(acme, 12, seed=1)
    fill(initech, 3, seed=2)
    fill(initech, 9, seed=3, status=SemanticEntry.Status.RETIRED)  # only active entries count
    before = [[e.pk for e in candidates(scope(acme), v, k=3)] for v in vectors[:4]]

    done = tenant_indexes.maintain(min_rows=10)
    assert done.created == [acme.pk] and not done.dropped and done.counts == {acme.pk: 12, initech.pk: 3}
    definition = index_defs()[f"{tenant_indexes.PREFIX}{acme.pk}"]
    assert "USING hnsw (embedding vector_cosine_ops)" in definition
    assert f"tenant_id = {acme.pk}" in definition and "'active'" in definition

    with connection.cursor() as cursor:  # the layer's own query can use it (the tenant is a literal)
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_indexscan = on")
        sql, params = candidates_query(scope(acme), vectors[0])
        cursor.execute("EXPLAIN " + sql, params)
        assert f"{tenant_indexes.PREFIX}{acme.pk}" in "\n".join(r[0] for r in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
        cursor.execute("RESET enable_bitmapscan")
    assert [[e.pk for e in candidates(scope(acme), v, k=3)] for v in vectors[:4]] == before
    assert before[0][0] == SemanticEntry.objects.get(question="question 1-0").pk

    again = tenant_indexes.maintain(min_rows=10)  # nothing to do twice
    assert again.kept == [acme.pk] and not again.created and not again.dropped


def test_an_index_is_dropped_only_below_half_the_threshold(acme):
    fill(acme, 10, seed=4)
    assert tenant_indexes.maintain(min_rows=10).created == [acme.pk]
    ids = list(SemanticEntry.objects.filter(tenant=acme).values_list("pk", flat=True))
    SemanticEntry.objects.filter(pk__in=ids[:5]).update(status=SemanticEntry.Status.RETIRED)
    assert tenant_indexes.maintain(min_rows=10).kept == [acme.pk]  # 5 of 10: kept
    SemanticEntry.objects.filter(pk__in=ids[5:6]).update(status=SemanticEntry.Status.PURGED)
    done = tenant_indexes.maintain(min_rows=10)
    assert done.dropped == [acme.pk] and not [n for n in index_defs() if n.startswith(tenant_indexes.PREFIX)]


def test_an_invalid_index_is_built_again(acme):
    fill(acme, 10, seed=5)
    tenant_indexes.maintain(min_rows=10)
    with connection.cursor() as cursor:  # what a concurrent build that died leaves behind
        cursor.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
                       [f"{tenant_indexes.PREFIX}{acme.pk}"])
    assert tenant_indexes.existing() == {acme.pk: False}
    assert tenant_indexes.maintain(min_rows=10).rebuilt == [acme.pk]
    assert tenant_indexes.existing() == {acme.pk: True}


def test_dry_run_changes_nothing_and_bad_thresholds_are_refused(acme):
    fill(acme, 10, seed=6)
    assert tenant_indexes.maintain(min_rows=10, dry_run=True).created == [acme.pk]
    assert tenant_indexes.existing() == {}
    for bad in (0, -5):
        with pytest.raises(ValueError, match="at least 1"):
            tenant_indexes.maintain(min_rows=bad)
    assert tenant_indexes.existing() == {}


def test_the_job_and_the_command_record_what_they_did(acme, settings, capsys):
    settings.SEMANTIC_TENANT_INDEX_MIN_ROWS = 10
    fill(acme, 10, seed=7)
    call_command("semantic_indexes", "--dry-run")
    assert "would create 1" in capsys.readouterr().out and tenant_indexes.existing() == {}
    run = tenant_indexes.run_job(task_id="t-1")
    assert run.status == JobRun.Status.SUCCEEDED and run.changed == 1 and run.detail["created"] == [acme.pk]
    call_command("semantic_indexes")
    assert "kept 1" in capsys.readouterr().out

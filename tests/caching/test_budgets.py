"""Byte budgets per tenant and layer (``core.budgets``): a tenant over its budget evicts its own
oldest entries, never another tenant's, in every layer: exact answers, semantic entries, search
results and its customers' question vectors. Two tenants fill a Redis of its own; the quiet one
loses nothing, and Redis itself never has to evict."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from caching.layers.exact import ExactLayer, exact_prefix
from caching.layers.search import SearchLayer, search_key
from caching.models import SemanticEntry
from core import budgets
from core.redis_client import get_redis, tenant_tag
from retrieval.embeddings import question_scope
from retrieval.search import SearchHit
from supportbot import pipeline
from tests.caching.helpers import offer

BUDGET = 100_000
BIG_ANSWER = "Unused items can be returned within 30 days of delivery [1]. " * 60  # 3.7 KB, under admission's cap


def keys_of(tenant_id: int, prefix: str) -> set[bytes]:
    return {k for k in get_redis().scan_iter(match=f"{prefix}*{tenant_tag(tenant_id)}*", count=1000)}


def hits(n: int) -> list[SearchHit]:
    return [SearchHit(chunk_id=i, article_pk=1, article_id="a", title="T", url="https://x", version=1, heading="",
                      text="passage " * 400, similarity=0.5) for i in range(n)]


def test_a_noisy_tenant_evicts_only_its_own_oldest_entries(acme, initech, small_redis, settings):
    r = get_redis()
    r.config_set("maxmemory-policy", "allkeys-lru")
    r.config_set("maxmemory", r.info("memory")["used_memory"] + 700_000)
    initech.cache_budgets = {layer: BUDGET for layer in budgets.LAYERS}
    initech.save(update_fields=["cache_budgets"])
    budgets.budgets_forget()
    quiet = [offer(pipeline.Asker(acme, "en"), f"Quiet question number {i} about returns?", BIG_ANSWER)
             for i in range(5)]
    SearchLayer().store(search_key("quiet search", acme.pk, "en", 5, 1), hits(3))
    quiet_exact, quiet_vectors = keys_of(acme.pk, "ans:"), keys_of(acme.pk, "emb:")
    quiet_search = keys_of(acme.pk, "srch:")
    assert len(quiet_exact) == 5 and len(quiet_vectors) >= 5 and len(quiet_search) == 1
    quiet_entries = set(SemanticEntry.objects.filter(tenant=acme, status="active").values_list("pk", flat=True))
    assert len(quiet_entries) == 5

    noisy = pipeline.Asker(initech, "en")
    for i in range(60):  # ~1 MB of answers, results and vectors: past the budgets and Redis's limit
        offer(noisy, f"Noisy question {i} about exporting report {i}?", BIG_ANSWER, article="export-data-to-csv")
        SearchLayer().store(search_key(f"noisy search {i}", initech.pk, "en", 5, 1), hits(3))

    # the quiet tenant lost nothing, in any layer
    assert quiet_exact <= keys_of(acme.pk, "ans:")
    assert quiet_vectors <= keys_of(acme.pk, "emb:")
    assert quiet_search <= keys_of(acme.pk, "srch:")
    assert all(r.exists(s.key) for s in quiet)
    assert quiet_entries <= set(SemanticEntry.objects.filter(tenant=acme, status="active").values_list("pk", flat=True))
    # the noisy one keeps within its budget, its newest entries kept, its oldest gone
    for layer in ("exact", "search", "vectors"):
        assert 0 < budgets.used_bytes(r, layer, initech.pk) <= BUDGET, layer
    noisy_exact = keys_of(initech.pk, "ans:")
    assert 0 < len(noisy_exact) < 60 and 0 < len(keys_of(initech.pk, "srch:")) < 60
    active = SemanticEntry.objects.filter(tenant=initech, status="active")
    assert 0 < active.count() < 60 and active.filter(question__startswith="Noisy question 59").exists()
    assert not active.filter(question__startswith="Noisy question 0 ").exists()
    assert ExactLayer().tenant_size(initech.pk) == len(noisy_exact)  # the count index follows the budget
    # Redis never had to pick victims itself (it could have picked the quiet tenant's)
    assert r.info("stats")["evicted_keys"] == 0
    assert exact_prefix(acme.pk).encode() in next(iter(quiet_exact))


def test_budgets_come_from_the_tenant_else_the_defaults_and_are_validated(acme, settings):
    settings.CACHE_BUDGET_BYTES = {"exact": 111, "semantic": 222, "search": 333, "vectors": 444}
    acme.cache_budgets = {"exact": 5000}
    acme.save(update_fields=["cache_budgets"])
    budgets.budgets_forget()
    assert budgets.budget_bytes(acme.pk, "exact") == 5000
    assert budgets.budget_bytes(acme.pk, "vectors") == 444
    for bad in ({"exakt": 5}, {"exact": -1}, {"exact": "5 MB"}, ["exact"]):
        acme.cache_budgets = bad
        with pytest.raises(ValidationError):
            acme.full_clean()

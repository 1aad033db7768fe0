"""A full Redis is a cache miss, never a failed Ask: under ``noeviction`` every write is refused
with an OOM error reply, and each cache path records it and carries on; under ``allkeys-lru`` (the
cache Redis's policy) writes go on and Redis evicts. Per-tenant caps keep one tenant from filling
the caches; what they evict, and what expires, is counted for the dashboard (issue 14, item 7)."""
from __future__ import annotations

import json
import time

import pytest
import redis
from django.contrib.auth.models import User
from django.utils import timezone

from caching import learning
from caching.churn import churn_totals, redis_memory
from caching.layers.exact import ExactLayer
from caching.models import AskEvent, SemanticEntry
from caching.purge import semantic_expired_cleanup
from core.redis_client import get_redis, redis_available
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, offer, scripted_model

ANSWER = "Unused items can be returned within 30 days of delivery [1]."
QUESTIONS = ["What is your return policy?", "How do I reset my password?", "How long does shipping take?",
             "Do you ship to Canada?"]


def fill(policy: str, headroom: int = 200_000) -> redis.Redis:
    """Limit the server to a little over what it holds, under ``policy``, and write until it is full."""
    r = get_redis()
    r.config_set("maxmemory-policy", policy)
    r.config_set("maxmemory", r.info("memory")["used_memory"] + headroom)
    for i in range(2000):
        try:
            r.set(f"junk:{i}", b"x" * 10_000)
        except redis.OutOfMemoryError:  # the server's "OOM command not allowed" reply
            return r
    assert policy != "noeviction", "the server never filled up"
    return r


def test_a_full_redis_under_noeviction_is_a_recorded_miss_on_every_cache_path(client, acme, small_redis):
    fill("noeviction")
    with scripted_model(ANSWER):
        response = client.post("/api/t/acme/ask", data=json.dumps({"question": QUESTIONS[0]}),
                               content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "answered" and body["answer"] == ANSWER and body["cache"] == {"layer": "none"}
    decisions = {(d.layer, d.disposition): d.reason
                 for d in AskEvent.objects.get(request_id=body["request_id"]).decisions.all()}
    assert decisions[("exact", "skipped")].startswith("redis error: OutOfMemoryError")  # the store was refused
    assert "not stored (redis error: OutOfMemoryError" in decisions[("retrieval", "miss")]
    assert "OutOfMemoryError" in decisions[("embedding", "skipped")]
    assert ("semantic", "stored") in decisions  # PostgreSQL took the answer
    # the next Ask is served from the semantic cache, with Redis still full
    with scripted_model() as server:
        again = client.post("/api/t/acme/ask", data=json.dumps({"question": QUESTIONS[0].upper()}),
                            content_type="application/json")
    assert again.status_code == 200 and again.json()["cache"] == {"layer": "semantic"} and not server.requests


def test_a_full_redis_refuses_a_near_miss_check_without_taking_redis_for_down(acme, small_redis):
    """The verifier's per-tenant rate window is a write: refused, nothing is queued, and only that is lost
    (an error reply comes from a server that still answers, so the caches keep reading it)."""
    fill("noeviction")
    assert learning._rate_allows(acme.pk) is False
    assert redis_available()


def test_under_allkeys_lru_a_full_redis_evicts_and_the_caches_keep_working(acme, small_redis):
    r = fill("allkeys-lru")
    state = offer(pipeline.Asker(acme, "en"), QUESTIONS[1])
    assert r.get(state.key) is not None  # stored: room was made by evicting
    _, served = cached_lookup(pipeline.Asker(acme, "en"), QUESTIONS[1])
    assert served is not None
    memory = redis_memory()
    assert memory["policy"] == "allkeys-lru" and memory["evicted_keys"] > 0


def test_per_tenant_caps_evict_the_oldest_and_count_it(acme, initech, settings):
    settings.EXACT_CACHE_MAX_KEYS_PER_TENANT = 2
    settings.SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT = 2
    states = [offer(pipeline.Asker(acme, "en"), q) for q in QUESTIONS]
    offer(pipeline.Asker(initech, "en"), QUESTIONS[0])
    exact = ExactLayer()
    assert exact.tenant_size(acme.pk) == 2 and exact.tenant_size(initech.pk) == 1
    r = get_redis()
    assert [r.exists(s.key) for s in states] == [0, 0, 1, 1]  # the oldest went
    assert SemanticEntry.objects.filter(tenant=acme, status="active").count() == 2
    assert SemanticEntry.objects.filter(tenant=initech, status="active").count() == 1
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    churn = churn_totals(hour, timezone.now() + timezone.timedelta(hours=1))
    assert churn[(acme.pk, "exact", "evicted")] == 2 and churn[(acme.pk, "semantic", "evicted")] == 2
    assert (initech.pk, "exact", "evicted") not in churn


def test_expiries_are_counted_and_the_dashboard_shows_sizes_and_churn(client, acme, settings):
    settings.EXACT_CACHE_TTL_S = 1
    offer(pipeline.Asker(acme, "en"), QUESTIONS[0])
    time.sleep(1.1)
    offer(pipeline.Asker(acme, "en"), QUESTIONS[1])  # its store notices the first one's end
    SemanticEntry.objects.filter(tenant=acme, status="active").update(expires_at=timezone.now())
    semantic_expired_cleanup()
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    churn = churn_totals(hour, timezone.now() + timezone.timedelta(hours=1))
    assert churn[(acme.pk, "exact", "expired")] == 1 and churn[(acme.pk, "semantic", "expired")] == 2

    client.force_login(User.objects.create_superuser("boss", password="a-long-test-password-42"))
    page = client.get("/admin/ask/", {"range": "24h", "tenant": "acme"}).content.decode()
    row = page.split('id="size-table"')[1].split('data-tenant="acme"')[1].split("</tr>")[0]
    assert 'data-churn="exact_expired">1<' in row and 'data-churn="semantic_expired">2<' in row
    assert "allkeys-lru" in page or "noeviction" in page  # the cache Redis's policy is shown

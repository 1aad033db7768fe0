"""Redis Cluster: a tenant's keys share one slot, purges and erasure reach every shard, and the
Celery broker is refused on a cluster. Against the local three-primary cluster (``redis_cluster``)."""
from __future__ import annotations

import time

import pytest
from django.core.checks import run_checks
from redis.cluster import RedisCluster

from caching.keys import AnswerSpec
from caching.layers.base import CachedAnswer
from caching.layers.exact import ExactLayer, exact_key
from caching.layers.exact import citations as exact_citations
from caching.layers.search import SearchLayer, search_key
from caching.layers.search import citations as search_citations
from caching.models import PurgeRecord
from caching.purge import purge_citing, purge_sweep
from core.cachelayer import CacheScope
from core.redis_client import get_redis, tenant_tag
from retrieval.embeddings import question_scope
from retrieval.search import SearchHit
from supportbot.auth import api_key_create
from supportbot.checks import broker_is_not_a_cluster_node_check, broker_not_cluster_check
from tests.security.conftest import api_post
from tests.supportbot.test_chat import seed_answer

pytestmark = pytest.mark.parametrize("redis_backend", ["cluster"], indirect=True)


def shard_of(cluster, tenant_id: int) -> int:
    return cluster.port_of_slot(get_redis().keyslot(tenant_tag(tenant_id)))


def one_per_shard(cluster, count: int = 3) -> list[int]:
    """Tenant ids (not in the database) whose keys land on ``count`` different primaries."""
    picked: dict[int, int] = {}
    for tenant_id in range(10_000, 20_000):
        picked.setdefault(shard_of(cluster, tenant_id), tenant_id)
        if len(picked) == count:
            return list(picked.values())
    raise AssertionError("the slots are not spread over the primaries")


def cached(article_pk: int, version: int = 1) -> CachedAnswer:
    return CachedAnswer(answer="Within 30 days [1].", intent="general", created=time.time(), model="m",
                        prompt_version="p", source_request="req", question="q",
                        citations=[{"article_pk": article_pk, "article_id": "a", "title": "A", "url": "u",
                                    "version": version}])


def store_everywhere(tenant_id: int, article_pk: int, question: str = "q") -> tuple[str, str]:
    """An exact entry and a search result of the tenant, both citing the article."""
    spec = AnswerSpec(question=question, tenant=f"t{tenant_id}", tenant_id=tenant_id, locale="en",
                      answerer="extractive", model="m", model_revision="", prompt_version="p",
                      tenant_prompt_version="tp", generation_params={}, retrieval_version="r", policy_version=1)
    key = exact_key(spec)
    assert ExactLayer().store(key, cached(article_pk)).disposition == "stored"
    skey = search_key(question, tenant_id, "en", 4, 1)
    hit = SearchHit(chunk_id=1, article_pk=article_pk, article_id="a", title="A", url="u", version=1, heading="",
                    text="Within 30 days.", similarity=0.9)
    assert SearchLayer().store(skey, [hit]) == ""
    return key, skey


def test_the_client_is_a_cluster_client_of_three_primaries(redis_cluster):
    assert isinstance(get_redis(), RedisCluster)
    assert len(redis_cluster.primaries()) == 3


def test_every_key_of_a_tenant_lands_on_its_slot(client, demo, settings, redis_cluster):
    settings.RATELIMIT_ENABLED = True
    acme, initech = demo["acme"], demo["initech"]
    for tenant in (acme, initech):
        seed_answer(tenant, "What is your return policy?")
        raw_key = api_key_create(tenant, "tests")[1]
        # a miss (retrieval: search results, the question's vector), then exact hits with and without a key
        assert api_post(client, tenant.slug, {"question": "Do you ship to Canada?"}).status_code == 200
        for how in ({}, {"key": raw_key}, {}):
            answer = api_post(client, tenant.slug, {"question": "What is your return policy?"}, **how).json()
            assert answer["cache"]["layer"] == "exact", answer
    r = get_redis()
    for tenant in (acme, initech):
        tag = tenant_tag(tenant.pk)
        slot = r.keyslot(tag)
        keys_of = [k.decode() for k in r.scan_iter(match=f"*{tag}*", count=1000)]
        kinds = {k.split(tag)[0] for k in keys_of}
        # answers, their tenant index and reverse index, search results and theirs, the question's
        # vector, rate-limit counters (per client and the tenant's), the tenant's revisions
        assert {"ans:a2:", "ans-idx:a2:", "cite:ans:", "srch:", "cite:srch:", "rl:c:", "rl:t:",
                "rev:tenant:", "rev:articles:"} <= kinds, kinds
        assert any(k.startswith("emb:") and f":{question_scope(tenant.pk)}:" in k for k in keys_of)
        assert {r.keyslot(k) for k in keys_of} == {slot}
    # nothing else is per tenant but single-key counters read alone: shared vectors, global counters
    untagged = {k.decode().split(":")[0] for k in r.scan_iter(count=1000) if b"{t:" not in k}
    assert untagged <= {"emb", "sample", "idxv", "jobs", "lock", "ctok"}, untagged


def test_a_purge_by_citation_reaches_every_shard(db, redis_cluster):
    tenants = one_per_shard(redis_cluster)
    assert len({shard_of(redis_cluster, t) for t in tenants}) == 3
    gone_article, kept_article = 900_000_001, 900_000_002  # no such rows: a deleted article's purge
    doomed = [store_everywhere(t, gone_article, "q1") for t in tenants]
    kept = [store_everywhere(t, kept_article, "q2") for t in tenants]
    r = get_redis()
    assert all(r.exists(k) and r.exists(s) for k, s in doomed + kept)

    record = purge_citing(gone_article, trigger=PurgeRecord.Trigger.MANUAL)

    assert (record.removed_exact, record.removed_search) == (3, 3)
    assert not any(r.exists(k) or r.exists(s) for k, s in doomed)
    assert all(r.exists(k) and r.exists(s) for k, s in kept)
    for t in tenants:  # the reverse indexes went with the entries, each on its tenant's shard
        assert not r.exists(exact_citations.key(gone_article, t))
        assert not r.exists(search_citations.key(gone_article, t))
        assert r.exists(exact_citations.key(kept_article, t)) and r.exists(search_citations.key(kept_article, t))
    assert ExactLayer().tenant_size(tenants[0]) == 1  # purged, not expired: out of the tenant's count


def test_a_purge_of_a_known_article_reads_its_tenants_shard_only(acme, redis_cluster):
    article = acme.articles.filter(locale="en", status="active").first()
    mine = store_everywhere(acme.pk, article.pk)
    elsewhere = [store_everywhere(t, article.pk) for t in one_per_shard(redis_cluster)
                 if shard_of(redis_cluster, t) != shard_of(redis_cluster, acme.pk)]
    record = purge_citing(article.pk, article.version)
    r = get_redis()
    assert (record.removed_exact, record.removed_search) == (1, 1) and not r.exists(mine[0])
    assert all(r.exists(k) for k, _ in elsewhere)  # another tenant's set of the same pk is not this article's


def test_the_nightly_sweep_reads_every_shard(db, redis_cluster):
    tenants = one_per_shard(redis_cluster)
    stale = [store_everywhere(t, 900_000_003) for t in tenants]  # cites an article that is gone
    run = purge_sweep()
    assert run.detail["exact"] == 3 and run.detail["search"] == 3
    assert not any(get_redis().exists(k) or get_redis().exists(s) for k, s in stale)


def test_erasure_finds_a_tenants_entries_on_its_shard(db, redis_cluster):
    tenants = one_per_shard(redis_cluster)
    entries = {t: store_everywhere(t, 900_000_004, f"question of {t}") for t in tenants}
    victim = tenants[1]
    scope = CacheScope(victim, f"t{victim}", request_ids=frozenset({"req"}), normalized=(f"question of {victim}",))
    assert ExactLayer().purge_scope(scope) == 1
    assert SearchLayer().purge_scope(scope) == 1
    r = get_redis()
    assert not r.exists(entries[victim][0]) and not r.exists(entries[victim][1])
    assert all(r.exists(k) and r.exists(s) for t, (k, s) in entries.items() if t != victim)


def test_the_broker_is_never_a_cluster(settings, redis_cluster):
    settings.CELERY_BROKER_URL = redis_cluster.url
    assert [e.id for e in broker_not_cluster_check(None)] == ["supportbot.E002"]
    node = redis_cluster.url.replace("redis+cluster://", "redis://")  # a plain URL of a cluster node
    settings.CELERY_BROKER_URL = node
    assert broker_not_cluster_check(None) == []
    assert [e.id for e in broker_is_not_a_cluster_node_check(None)] == ["supportbot.E003"]
    assert "supportbot.E003" in {m.id for m in run_checks(include_deployment_checks=True)}


@pytest.fixture
def own_cluster(settings):
    """A cluster of this test's own, which it may break."""
    from core.embedded_cluster import start_cluster
    from core.redis_client import reset_redis_state

    cluster = start_cluster(primaries=3)
    settings.REDIS_URL = cluster.url
    reset_redis_state()
    yield cluster
    cluster.stop()
    reset_redis_state()


def test_a_dead_shard_costs_only_its_own_tenants(own_cluster, settings):
    from core.redis_client import redis_available
    from supportbot import ratelimit

    settings.RATELIMIT_ENABLED = True
    victim, other = one_per_shard(own_cluster, 2)
    r = get_redis()
    r.set(f"probe:{tenant_tag(victim)}", 1)
    r.set(f"probe:{tenant_tag(other)}", 1)
    assert ratelimit.check(victim, "ip:a").scope == ratelimit.check(other, "ip:a").scope == ""
    own_cluster.kill(shard_of(own_cluster, victim))

    started = time.monotonic()
    assert ratelimit.check(victim, "ip:a").scope == "skipped"  # fails open: the request goes on, uncached
    assert ratelimit.check(victim, "ip:a").scope == "skipped"  # at once now: that node backs off
    assert time.monotonic() - started < 2.0
    assert redis_available()  # not the whole of Redis
    verdict = ratelimit.check(other, "ip:a", read=(f"probe:{tenant_tag(other)}",))
    assert verdict.scope == "" and verdict.read == (b"1",)
    assert r.get(f"probe:{tenant_tag(other)}") == b"1"

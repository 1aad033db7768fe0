"""Tenants, API keys and cited article versions kept per process under Redis revisions."""
import json

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from caching.citations import article_versions, current_versions, stale_citations
from core.localcache import MISSING, LocalCache, RevisionedCache, _every_cache, forget_every_cache
from core.models import Tenant
from core.redis_client import get_redis, mark_redis_down, reset_redis_state
from ingestion.models import Article
from ingestion.services import article_edit
from supportbot import auth, pipeline
from supportbot.selectors import tenant_cache, tenant_directory_get, tenant_directory_peek
from tests.caching.helpers import offer

QUESTION = "What is your return policy?"


def ask(client, slug, question=QUESTION, key=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.post(f"/api/t/{slug}/ask", data=json.dumps({"question": question}),
                       content_type="application/json", **headers)


def other_process(cache: RevisionedCache) -> RevisionedCache:
    """The same cache as another process holds it: same Redis revisions, its own copies."""
    return RevisionedCache(cache.name)


def test_a_second_read_comes_from_the_process_without_a_query(acme):
    first = tenant_directory_get("acme")
    with CaptureQueriesContext(connection) as queries:
        again = tenant_directory_get("acme")
    assert again is first and len(queries) == 0
    assert tenant_directory_get("nobody") is None


def test_a_save_in_one_process_reaches_the_copy_of_another(acme):
    elsewhere = other_process(tenant_cache)
    load = lambda: Tenant.objects.get(slug="acme")  # noqa: E731
    before = elsewhere.get(acme.pk, load)
    assert elsewhere.get(acme.pk, load) is before  # kept
    acme.policy_version += 1
    acme.save(update_fields=["policy_version"])  # bumps the revision (here and after the commit)
    after = elsewhere.get(acme.pk, load)
    assert after is not before and after.policy_version == before.policy_version + 1


def test_without_redis_nothing_local_is_trusted(acme):
    tenant_directory_get("acme")
    mark_redis_down()
    try:
        with CaptureQueriesContext(connection) as queries:
            assert tenant_directory_get("acme").tenant.pk == acme.pk
        assert len(queries) == 2  # the tenant and its keys, from the database
    finally:
        reset_redis_state()


def test_a_lost_revision_reloads_and_copies_have_a_maximum_age(acme, settings):
    first = tenant_directory_get("acme")
    get_redis().delete(tenant_cache.rev_key(acme.pk))  # Redis restarted empty
    second = tenant_directory_get("acme")
    assert second is not first
    settings.LOCAL_CACHE_MAX_AGE_S = 0  # a bump that was lost is bounded by the age
    assert tenant_directory_get("acme") is not second


def test_a_revoked_key_is_refused_on_the_next_request_of_a_process_holding_it(client, acme):
    offer(pipeline.Asker(acme, "en"), QUESTION)
    row, raw = auth.api_key_create(acme, "shop backend")
    assert ask(client, "acme", key=raw).status_code == 200
    assert ask(client, "acme", key=raw).status_code == 200  # from the process's copy
    auth.api_key_revoke(row.prefix)
    refused = ask(client, "acme", key=raw)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"


def test_a_policy_bump_changes_the_exact_key_of_a_process_holding_the_tenant(client, acme):
    offer(pipeline.Asker(acme, "en"), QUESTION)
    assert ask(client, "acme").json()["cache"]["layer"] == "exact"
    acme.policy_version += 1
    acme.save(update_fields=["policy_version"])
    assert ask(client, "acme").json()["cache"]["layer"] != "exact"


def test_article_versions_follow_every_save_and_check_the_tenant(acme, initech):
    article = Article.objects.get(tenant=acme, locale="en", external_id="return-policy")
    cited = [{"article_pk": article.pk, "version": article.version, "article_id": article.external_id}]
    assert current_versions(acme.pk)[article.pk] == article.version
    assert stale_citations(acme.pk, cited) == []
    assert stale_citations(initech.pk, cited) == cited  # another tenant's article is never current here
    elsewhere = other_process(article_versions)
    assert elsewhere.get(acme.pk, lambda: {article.pk: article.version})[article.pk] == article.version
    article_edit(article, title=article.title, body=article.body + "\n\nA new rule.", url=article.url)
    assert stale_citations(acme.pk, cited) == cited
    reloaded = elsewhere.get(acme.pk, lambda: current_versions(acme.pk))
    assert reloaded[article.pk] == article.version + 1


def test_a_revision_read_by_the_caller_is_checked_like_one_read_here(acme):
    first = tenant_directory_get("acme")
    r = get_redis()
    assert tenant_directory_get("acme", rev=r.get(tenant_cache.rev_key(acme.pk))) is first
    second = tenant_directory_get("acme", rev=b"another")  # moved on since this process loaded it
    assert second is not first
    r.delete(tenant_cache.rev_key(acme.pk))
    assert tenant_directory_get("acme", rev=None) is not second  # absent: a new revision, a new load


def test_a_tenants_slug_never_changes_under_the_directory(acme):
    """A slug is fixed once the tenant exists (customer references and token keys derive from it,
    docs/security.md), so the directory's entry for it stays right."""
    assert tenant_directory_get("acme").tenant.pk == acme.pk
    peeked = tenant_directory_peek("acme")
    assert peeked is not None and peeked.tenant.pk == acme.pk
    acme.slug = "acme-renamed"
    with pytest.raises(ValidationError):
        acme.save(update_fields=["slug"])
    assert tenant_directory_get("acme").tenant.pk == acme.pk
    assert tenant_directory_get("acme-renamed") is None


# --------------------------------------------------------------------------- the one rule (LocalCache)

def test_an_entry_lives_until_its_ttl_or_its_revision_changes(monkeypatch):
    from core import localcache
    from core.localcache import MISSING, LocalCache

    now = [100.0]
    monkeypatch.setattr(localcache.time, "monotonic", lambda: now[0])
    cache = LocalCache("test", ttl_s=5.0)
    loads = []
    load = lambda: loads.append(1) or len(loads)  # noqa: E731
    assert cache.get("k", load, rev="r1") == 1 and cache.get("k", load, rev="r1") == 1
    assert cache.get("k", load, rev="r2") == 2  # another revision: loaded again
    now[0] += 4.9
    assert cache.lookup("k", "r2") == 2
    now[0] += 0.1
    assert cache.lookup("k", "r2") is MISSING and cache.peek("k") == 2  # past its TTL
    ttl = [10.0]
    read_each_time = LocalCache("test", ttl_s=lambda: ttl[0])
    read_each_time.put("k", "v")
    ttl[0] = 0  # a setting changed at run time applies to entries already kept
    assert read_each_time.lookup("k") is MISSING


def test_without_a_ttl_until_forgotten_and_a_full_cache_is_emptied():
    from core.localcache import MISSING, LocalCache

    cache = LocalCache("test", max_entries=3)
    for key in "abc":
        cache.put(key, key.upper())
    assert len(cache) == 3 and cache.lookup("a") == "A"
    cache.put("a", "A2")  # a key already kept replaces itself
    assert len(cache) == 3
    cache.put("d", "D")
    assert len(cache) == 1 and cache.lookup("b") is MISSING and cache.lookup("d") == "D"
    cache.forget("d")
    assert cache.lookup("d") is MISSING


def test_a_forked_process_starts_with_every_cache_empty():
    import multiprocessing

    from core.localcache import LocalCache

    cache = LocalCache("test")
    cache.put("k", "v")
    parent, child = multiprocessing.get_context("fork").Pipe()

    def report():
        child.send(len(cache))

    process = multiprocessing.get_context("fork").Process(target=report)
    process.start()
    process.join(30)
    assert parent.recv() == 0 and len(cache) == 1


def test_every_cache_of_the_process_can_be_emptied_at_once_and_each_test_starts_so():
    assert not [cache.name for cache in list(_every_cache) if len(cache)]  # tests/conftest.py::_clean_redis
    kept = [LocalCache("test a"), RevisionedCache("test b")._copies]
    for cache in kept:
        cache.put("k", 1, rev="r")
    forget_every_cache()
    assert [cache.lookup("k", "r") for cache in kept] == [MISSING, MISSING]

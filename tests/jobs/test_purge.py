"""Citation-based purges as services (the event -> worker path is in test_worker.py): all three
layers, unrelated entries untouched, the nightly sweep for missed events, TTL clean-up, and the
policy-version bump that needs no purge at all."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from caching.models import PurgeRecord, SemanticEntry
from caching.purge import purge_citing, purge_sweep, semantic_expired_cleanup
from core.models import JobRun
from ingestion.models import Article
from ingestion.services import article_edit, article_retire
from supportbot import pipeline
from tests.caching.helpers import cached_lookup
from tests.jobs.helpers import CachedEverywhere

pytestmark = pytest.mark.django_db

ALL = {"exact": True, "semantic": True, "search": True}
NONE = {"exact": False, "semantic": False, "search": False}


def article(tenant, external_id) -> Article:
    return Article.objects.get(tenant=tenant, locale="en", external_id=external_id)


def edit(a: Article) -> None:
    article_edit(a, title=a.title, url=a.url, body=a.body + "\n\n## Update\n\nThis policy was revised.\n")


@pytest.mark.redis_cluster
def test_purge_citing_removes_an_articles_citers_from_every_layer_and_nothing_else(acme):
    returns = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    two_fa = CachedEverywhere(acme, "How do I turn on two-factor authentication?", "two-factor-authentication")
    rp = article(acme, "return-policy")
    assert rp.pk in returns.search_article_pks and rp.pk not in two_fa.search_article_pks
    assert returns.layers() == two_fa.layers() == ALL

    record = purge_citing(rp.pk, rp.version, PurgeRecord.Trigger.ADMIN)

    assert returns.layers() == NONE
    assert two_fa.layers() == ALL
    assert (record.removed_exact, record.removed_semantic) == (1, 1) and record.removed_search >= 1
    assert (record.article, record.tenant, record.trigger) == (rp, acme, "admin")
    # idempotent: a redelivered task finds nothing left
    again = purge_citing(rp.pk, rp.version, PurgeRecord.Trigger.ADMIN)
    assert (again.removed_exact, again.removed_semantic, again.removed_search) == (0, 0, 0)


@pytest.mark.redis_cluster
def test_the_sweep_purges_what_a_missed_event_left_and_keeps_entries_of_current_versions(acme):
    stale = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    unrelated = CachedEverywhere(acme, "How do I turn on two-factor authentication?", "two-factor-authentication")
    refunds = CachedEverywhere(acme, "How long do refunds take?", "refunds")
    rp, refunds_article = article(acme, "return-policy"), article(acme, "refunds")
    assert not {rp.pk, refunds_article.pk} & unrelated.search_article_pks
    # the edit commits nothing here (the test's transaction), so no event reaches a purge: a missed event
    edit(rp)
    article_retire(refunds_article)
    fresh = CachedEverywhere(acme, "Can I return opened items?", "return-policy")  # cites the new version
    assert stale.layers() == refunds.layers() == fresh.layers() == ALL

    run = purge_sweep()

    assert run.status == JobRun.Status.SUCCEEDED and run.job == "purge_sweep"
    assert stale.in_exact() is False and stale.in_semantic() is False and stale.in_search() is False
    assert refunds.in_exact() is False and refunds.in_semantic() is False and refunds.in_search() is False
    assert fresh.in_exact() and fresh.in_semantic()
    assert unrelated.layers() == ALL
    records = {r.article_pk: r for r in PurgeRecord.objects.filter(trigger=PurgeRecord.Trigger.SWEEP)}
    rp.refresh_from_db()
    assert records[rp.pk].version == rp.version and records[rp.pk].removed_exact >= 1
    assert records[rp.pk].removed_semantic >= 1 and records[rp.pk].removed_search >= 1
    assert records[refunds_article.pk].version is None  # retired
    assert run.removed == sum(r.removed_exact + r.removed_semantic + r.removed_search for r in records.values())
    # a second sweep finds nothing
    assert purge_sweep().removed == 0


def test_a_policy_version_bump_makes_older_answers_unreachable_without_any_purge(acme):
    asker = pipeline.Asker(acme, "en")
    cached = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    state, served = cached_lookup(asker, "What is your return policy?")
    assert served is not None and state.layer == "exact"

    acme.policy_version += 1
    acme.save(update_fields=["policy_version"])
    state, served = cached_lookup(pipeline.Asker(acme, "en"), "What is your return policy?")

    assert served is None  # neither the exact key nor the semantic scope matches the new version
    assert state.key != cached.exact_key
    assert [d.disposition for d in state.layers if d.layer in ("exact", "semantic")] == ["miss", "miss"]
    assert cached.in_exact() and cached.in_semantic()  # nothing was deleted: no work at all
    assert not PurgeRecord.objects.exists()


def test_ttl_clean_up_retires_expired_entries_and_deletes_long_dead_ones(acme, settings):
    live = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    expired = CachedEverywhere(acme, "How long do refunds take?", "refunds")
    dead = CachedEverywhere(acme, "How do I turn on two-factor authentication?", "two-factor-authentication")
    SemanticEntry.objects.filter(exact_key=expired.exact_key).update(expires_at=timezone.now() - timedelta(minutes=1))
    SemanticEntry.objects.filter(exact_key=dead.exact_key).update(
        status=SemanticEntry.Status.PURGED,
        expires_at=timezone.now() - timedelta(days=settings.SEMANTIC_CACHE_RETENTION_DAYS + 1))

    run = semantic_expired_cleanup()

    assert run.status == JobRun.Status.SUCCEEDED and (run.changed, run.removed) == (1, 1)
    assert SemanticEntry.objects.get(exact_key=expired.exact_key).status == SemanticEntry.Status.RETIRED
    assert not SemanticEntry.objects.filter(exact_key=dead.exact_key).exists()
    assert SemanticEntry.objects.get(exact_key=live.exact_key).status == SemanticEntry.Status.ACTIVE

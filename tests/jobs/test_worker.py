"""The wiring, proven with a real Celery worker (a subprocess on every queue) against the test
database and the real Redis: events queued on commit, purges within seconds, the nightly task,
and the lock across processes. Data must be committed for the worker to see it, hence
transactional tests."""
from __future__ import annotations

import pytest

from caching.models import PurgeRecord
from core.locks import job_lock
from core.models import JobRun
from ingestion.models import Article, Chunk
from ingestion.services import article_edit
from retrieval.indexing import INDEX_REFRESH_JOB, REEMBED_JOB
from retrieval.tasks import reembed_changed
from tests import factories
from tests.jobs.conftest import wait_until
from tests.jobs.helpers import CachedEverywhere, current_chunk_ids, indexed_chunk_ids, kb_article, sections_body

pytestmark = pytest.mark.django_db(transaction=True)

ALL = {"exact": True, "semantic": True, "search": True}
NONE = {"exact": False, "semantic": False, "search": False}


def test_saving_an_article_purges_its_cached_answers_from_every_layer_and_reindexes_it(demo, celery_worker):
    acme = demo["acme"]
    returns = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    two_fa = CachedEverywhere(acme, "How do I turn on two-factor authentication?", "two-factor-authentication")
    rp = Article.objects.get(tenant=acme, locale="en", external_id="return-policy")
    assert rp.pk in returns.search_article_pks and rp.pk not in two_fa.search_article_pks
    assert returns.layers() == two_fa.layers() == ALL

    # what the admin does when staff save the article
    article_edit(rp, title=rp.title, url=rp.url, body=rp.body + "\n\n## Holiday returns\n\nGifts bought in "
                 "December can be returned until January 31.\n")

    wait_until(lambda: returns.layers() == NONE, timeout=30)
    assert two_fa.layers() == ALL
    record = wait_until(lambda: PurgeRecord.objects.filter(article_pk=rp.pk, trigger="admin").first())
    rp.refresh_from_db()
    assert record.version == rp.version == 2
    assert (record.removed_exact, record.removed_semantic) == (1, 1) and record.removed_search >= 1
    # the worker also re-indexed the tenant: the new version is searchable, the old one is not
    wait_until(lambda: indexed_chunk_ids(acme) == current_chunk_ids(acme), timeout=60)
    assert wait_until(lambda: [r for r in JobRun.objects.filter(job=INDEX_REFRESH_JOB, status="succeeded")
                               if r.detail["tenant_id"] == acme.pk and rp.pk in r.detail["articles"]])


def test_the_nightly_task_runs_on_the_worker_and_records_its_run(db, celery_worker, settings):
    settings.JOBS_INDEX_ON_CHANGE = False  # leave the new chunks to the nightly job
    tenant = factories.tenant("jobs-nightly")
    kb_article(tenant, "alpha", sections_body(3))
    kb_article(tenant, "beta", sections_body(2))
    expected = len(current_chunk_ids(tenant))

    reembed_changed.delay(tenant_id=tenant.pk)

    run = wait_until(lambda: JobRun.objects.filter(job=REEMBED_JOB).exclude(status="running").first(), timeout=60)
    assert run.status == JobRun.Status.SUCCEEDED and run.task_id
    assert run.changed == run.embedded == expected
    assert indexed_chunk_ids(tenant) == current_chunk_ids(tenant)


def test_overlapping_runs_are_prevented_by_the_lock_across_processes(db, celery_worker, settings):
    settings.JOBS_INDEX_ON_CHANGE = False
    tenant = factories.tenant("jobs-overlap")
    kb_article(tenant, "alpha", sections_body(2))

    with job_lock(REEMBED_JOB):  # a run in progress on another host
        result = reembed_changed.delay()
        assert result.get(timeout=30) is None
    skipped = JobRun.objects.get(job=REEMBED_JOB)
    assert skipped.status == JobRun.Status.SKIPPED and skipped.task_id == result.id
    assert indexed_chunk_ids(tenant) == set()  # the skipped run did nothing

    result = reembed_changed.delay()
    run = JobRun.objects.get(pk=result.get(timeout=60))
    assert run.status == JobRun.Status.SUCCEEDED
    assert indexed_chunk_ids(tenant) == current_chunk_ids(tenant)
    assert Chunk.objects.filter(is_current=True).count() == run.scanned


def test_an_edit_reaches_cached_answers_that_do_not_cite_it_once_it_is_reindexed(demo, celery_worker):
    """article_changed -> re-index on the worker -> index_refreshed -> purge of the answers whose
    question now retrieves the edited article (issue 13, part 4)."""
    acme = demo["acme"]
    stale = CachedEverywhere(acme, "Is there a student discount?", "price-match")
    unrelated = CachedEverywhere(acme, "How do I turn on two-factor authentication?", "two-factor-authentication")
    plus = Article.objects.get(tenant=acme, locale="en", external_id="plus-membership")
    assert stale.layers() == unrelated.layers() == ALL

    article_edit(plus, title=plus.title, url=plus.url, body=plus.body + "\n\n## Student discount\n\nStudents get "
                 "a discount of 20% on Plus membership with a valid student card.\n")

    wait_until(lambda: not stale.in_exact() and not stale.in_semantic(), timeout=90)
    assert unrelated.in_exact() and unrelated.in_semantic()
    record = wait_until(lambda: PurgeRecord.objects.filter(article_pk=plus.pk, trigger="retrieval").first())
    assert (record.removed_exact, record.removed_semantic) == (1, 1)

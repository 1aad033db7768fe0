"""The nightly re-embed as a service (the worker wiring is in test_worker.py): change detection by
content, only changed text reaching the model, a report per run, and the lock."""
from __future__ import annotations

import time
import uuid

import pytest

from core.locks import LockHeld, LockLost, RedisLock, job_lock, lock_key
from core.models import JobRun
from core.redis_client import get_redis
from ingestion.models import Chunk
from ingestion.services import article_retire
from retrieval.indexing import REEMBED_JOB, reembed_changed
from tests import factories
from tests.jobs.helpers import current_chunk_ids, indexed_chunk_ids, kb_article, sections_body

pytestmark = pytest.mark.django_db


def chunks_of(article) -> int:
    return Chunk.objects.filter(article=article, is_current=True).count()


def test_change_detection_embeds_edits_and_additions_drops_removals_and_ignores_the_unchanged(demo):
    tenant = factories.tenant("jobs-detect")
    token = uuid.uuid4().hex
    alpha = kb_article(tenant, "alpha", sections_body(4, token))
    beta = kb_article(tenant, "beta", sections_body(3))
    first = reembed_changed(tenant_id=tenant.pk)
    assert first.status == JobRun.Status.SUCCEEDED
    assert first.changed == chunks_of(alpha) + chunks_of(beta) == first.embedded
    assert indexed_chunk_ids(tenant) == current_chunk_ids(tenant)

    # no-op: nothing changed, nothing embedded, nothing removed
    again = reembed_changed(tenant_id=tenant.pk)
    assert (again.scanned, again.changed, again.embedded, again.cache_hits, again.removed) == (
        first.scanned, 0, 0, 0, 0)

    # edit one section of alpha, add gamma, remove beta
    old_alpha_chunks, beta_chunks = chunks_of(alpha), chunks_of(beta)
    alpha = kb_article(tenant, "alpha", sections_body(4, token, changed={2}))
    gamma = kb_article(tenant, "gamma", sections_body(2))
    article_retire(beta)
    run = reembed_changed(tenant_id=tenant.pk)

    # every chunk of the new alpha version is a new row, but only the edited section is new text
    assert run.changed == chunks_of(alpha) + chunks_of(gamma)
    assert run.embedded == 1 + chunks_of(gamma)
    assert run.cache_hits == chunks_of(alpha) - 1
    assert run.removed == old_alpha_chunks + beta_chunks
    assert run.scanned == chunks_of(alpha) + chunks_of(gamma)
    assert indexed_chunk_ids(tenant) == current_chunk_ids(tenant)
    assert run.progress_done == run.progress_total == run.changed
    assert run.detail["article_versions_since_last_success"] >= 2  # alpha v2 and gamma v1
    assert run.finished_at and run.duration_s > 0


def test_a_second_run_with_nothing_changed_embeds_nothing(demo):
    reembed_changed()  # whatever earlier tests left behind
    run = reembed_changed()
    assert run.status == JobRun.Status.SUCCEEDED
    assert run.scanned == Chunk.objects.filter(is_current=True).count() > 0
    assert (run.changed, run.embedded, run.cache_hits, run.removed) == (0, 0, 0, 0)


def test_a_run_is_refused_while_another_holds_the_lock_and_recorded_as_skipped(demo):
    with job_lock(REEMBED_JOB):
        with pytest.raises(LockHeld):
            reembed_changed()
    skipped = JobRun.objects.filter(job=REEMBED_JOB).latest("started_at")
    assert skipped.status == JobRun.Status.SKIPPED and "already running" in skipped.error
    assert not get_redis().exists(lock_key(REEMBED_JOB))  # released
    assert reembed_changed().status == JobRun.Status.SUCCEEDED


def test_the_lock_is_only_released_or_extended_by_its_holder():
    first = RedisLock("jobs-test-lock", ttl_s=0.2)
    assert first.acquire()
    second = RedisLock("jobs-test-lock", ttl_s=5)
    assert not second.acquire()
    assert not second.release()  # another holder's token: the lock stays
    assert get_redis().get(first.key) == first.token.encode()
    first.extend()
    # the first holder stalls past its TTL and another run takes over ...
    get_redis().pexpire(first.key, 1)
    time.sleep(0.01)
    assert second.acquire()
    # ... the stale holder can neither extend nor release the new holder's lock
    with pytest.raises(LockLost):
        first.extend()
    assert not first.release()
    assert get_redis().get(second.key) == second.token.encode()
    assert second.release()


def test_a_failed_run_is_recorded_with_its_error_and_releases_the_lock(demo, monkeypatch):
    from django.db import OperationalError

    import retrieval.services

    tenant = factories.tenant("jobs-failing")
    kb_article(tenant, "alpha", sections_body(2))

    def broken(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(retrieval.services, "embed_texts", broken)
    with pytest.raises(OperationalError):
        reembed_changed(tenant_id=tenant.pk)
    run = JobRun.objects.filter(job=REEMBED_JOB).latest("started_at")
    assert run.status == JobRun.Status.FAILED and "server closed the connection" in run.error
    assert not get_redis().keys("lock:job:*")


def test_a_run_left_running_by_a_dead_worker_is_marked_failed_by_the_next_run(demo):
    lost = JobRun.objects.create(job=REEMBED_JOB, detail={"lock": REEMBED_JOB})
    other_tenant = JobRun.objects.create(job=REEMBED_JOB, detail={"lock": f"{REEMBED_JOB}:tenant:999"})

    assert reembed_changed().status == JobRun.Status.SUCCEEDED

    lost.refresh_from_db(), other_tenant.refresh_from_db()
    assert lost.status == JobRun.Status.FAILED and "worker lost" in lost.error
    assert other_tenant.status == JobRun.Status.RUNNING  # another lock: it may well be alive

"""A task that fails halfway: the database goes away after the first batch of vectors is stored.
The index must stay consistent (every stored vector belongs to a current chunk, nothing
half-written) and the task's retry policy must finish the job, doing only what was left.

The failure has to be injected into the worker, so this test runs Celery's own test worker in
this process (``celery.contrib.testing.worker.start_worker``) on a queue of its own; the rest is
real: broker, retry policy, database and the embedding model."""
from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import OperationalError

import retrieval.services
from core.models import JobRun
from ingestion.models import Chunk
from retrieval.indexing import REEMBED_JOB
from retrieval.models import ChunkEmbedding
from retrieval.tasks import reembed_changed
from supportbot.celery import app
from tests import factories
from tests.jobs.conftest import wait_until
from tests.jobs.helpers import current_chunk_ids, indexed_chunk_ids, kb_article, sections_body

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "jobs-test-retry"


def test_a_task_that_fails_halfway_leaves_the_index_consistent_and_retries(db, settings, monkeypatch):
    settings.JOBS_INDEX_ON_CHANGE = False
    tenant = factories.tenant("jobs-retry")
    for name in ("alpha", "beta", "gamma", "delta"):
        kb_article(tenant, name, sections_body(6))
    total = len(current_chunk_ids(tenant))
    batch = 8
    assert total > 2 * batch
    monkeypatch.setattr(retrieval.services, "BATCH", batch)
    real_embed_texts = retrieval.services.embed_texts
    seen = {"calls": 0}

    def database_dies_at_the_second_batch(texts, embedder=None, stats=None):
        seen["calls"] += 1
        if seen["calls"] == 2:
            seen["after_failure"] = list(ChunkEmbedding.objects.filter(tenant=tenant)
                                         .values_list("chunk_id", "content_hash"))
            raise OperationalError("server closed the connection unexpectedly")
        return real_embed_texts(texts, embedder=embedder, stats=stats)

    monkeypatch.setattr(retrieval.services, "embed_texts", database_dies_at_the_second_batch)

    with start_worker(app, pool="solo", queues=[QUEUE], perform_ping_check=False, shutdown_timeout=60):
        reembed_changed.apply_async(kwargs={"tenant_id": tenant.pk}, queue=QUEUE)
        wait_until(lambda: JobRun.objects.filter(job=REEMBED_JOB, status=JobRun.Status.SUCCEEDED).exists(),
                   timeout=90)

    failed, succeeded = JobRun.objects.filter(job=REEMBED_JOB).order_by("started_at")
    # the first attempt failed after one committed batch, and what it left was consistent
    assert failed.status == JobRun.Status.FAILED and "OperationalError" in failed.error and failed.attempt == 1
    stored = dict(seen["after_failure"])
    assert len(stored) == batch
    assert dict(Chunk.objects.filter(pk__in=stored).values_list("pk", "content_hash")) == stored
    assert Chunk.objects.filter(pk__in=stored, is_current=True).count() == batch
    # the retry did only what was left, and the index is complete
    assert succeeded.attempt == 2 and succeeded.task_id == failed.task_id
    assert succeeded.changed == succeeded.embedded == total - batch
    assert indexed_chunk_ids(tenant) == current_chunk_ids(tenant)
    assert ChunkEmbedding.objects.filter(tenant=tenant).count() == total  # nothing twice

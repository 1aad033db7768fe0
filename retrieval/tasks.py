"""Celery tasks of retrieval (queue ``embedding``): keeping the index in step, embedding-model upgrades.

``reembed_changed`` and ``index_refresh`` keep the names they were queued and scheduled under when they
lived in ``ingestion`` (beat rows and messages in flight still find them)."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from core.locks import LockHeld
from core.retry import RETRY_POLICY, TRANSIENT_ERRORS
from retrieval import generations, indexing


@shared_task(name="ingestion.tasks.reembed_changed", bind=True, **RETRY_POLICY)
def reembed_changed(self, tenant_id: int | None = None) -> int | None:
    """Nightly: embed new and edited chunks, drop stale vectors. Returns the JobRun id, or None when
    another run holds the lock (it is doing this very work; no retry)."""
    try:
        return indexing.reembed_changed(tenant_id=tenant_id, task_id=self.request.id or "",
                                        attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(name="ingestion.tasks.index_refresh", bind=True, ignore_result=True,
             autoretry_for=(*TRANSIENT_ERRORS, LockHeld), retry_backoff=2, retry_backoff_max=120, retry_jitter=True,
             max_retries=20)
def index_refresh(self, tenant_id: int) -> int:
    """After a change: re-index one tenant (waits for a refresh of the same tenant already running)."""
    return indexing.index_refresh(tenant_id, task_id=self.request.id or "", attempt=self.request.retries + 1).pk


@shared_task(name="retrieval.tasks.generation_upgrade", bind=True, **RETRY_POLICY)
def generation_upgrade(self, model_dir: str, model_name: str) -> int | None:
    """Build the index generation of another embedding model, switch to it atomically, and drop the
    retired generation's vectors after the grace period."""
    try:
        run = generations.generation_upgrade(generations.embedder_load(model_dir, model_name),
                                             task_id=self.request.id or "", attempt=self.request.retries + 1)
    except LockHeld:
        return None
    if run.detail.get("previous_generation_id"):
        generation_drop.apply_async((run.detail["previous_generation_id"],), countdown=settings.GENERATION_DROP_GRACE_S)
    return run.pk


@shared_task(name="retrieval.tasks.generation_drop", ignore_result=True, **RETRY_POLICY)
def generation_drop(generation_id: int) -> int:
    """A grace period after a switch: delete the retired generation's vectors."""
    return generations.generation_drop(generation_id)

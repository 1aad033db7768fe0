"""Celery tasks of the knowledge base (queue ``embedding``): thin wrappers over ``ingestion.jobs``."""
from __future__ import annotations

from celery import shared_task

from ingestion import jobs
from supportbot.locks import LockHeld
from supportbot.tasks import RETRY_POLICY, TRANSIENT_ERRORS


@shared_task(bind=True, **RETRY_POLICY)
def reembed_changed(self, tenant_id: int | None = None) -> int | None:
    """Nightly: embed new and edited chunks, drop stale vectors. Returns the JobRun id, or None when
    another run holds the lock (it is doing this very work; no retry)."""
    try:
        return jobs.reembed_changed(tenant_id=tenant_id, task_id=self.request.id or "",
                                    attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(bind=True, ignore_result=True, autoretry_for=(*TRANSIENT_ERRORS, LockHeld), retry_backoff=2,
             retry_backoff_max=120, retry_jitter=True, max_retries=20)
def index_refresh(self, tenant_id: int) -> int:
    """After a change: re-index one tenant (waits for a refresh of the same tenant already running)."""
    return jobs.index_refresh(tenant_id, task_id=self.request.id or "", attempt=self.request.retries + 1).pk

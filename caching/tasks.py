"""Celery tasks of the caching app: one-line wrappers that take ids and call a service."""
from __future__ import annotations

from celery import shared_task

from caching import calibration, modes, purge, rollups, tenant_indexes, verification
from core.locks import LockHeld
from core.retry import RETRY_POLICY


@shared_task(name="caching.tasks.rollup_hourly", ignore_result=True)
def rollup_hourly() -> int:
    """Roll up the decisions of every complete hour since the last roll-up (beat: hourly)."""
    return rollups.rollup_hours()


@shared_task(name="caching.tasks.semantic_fallback_check", ignore_result=True, **RETRY_POLICY)
def semantic_fallback_check(tenant_id: int | None = None) -> int:
    """Beat (every minute) for every tenant in serve, and after a wrong label or a customer's No on a
    semantic hit for its tenant: back to shadow past the bounds (``caching.modes``)."""
    if tenant_id is None:
        return len(modes.fallback_check_all())
    return int(modes.fallback_check(tenant_id) is not None)


@shared_task(name="caching.tasks.calibration_upload_run", bind=True, ignore_result=True, **RETRY_POLICY)
def calibration_upload_run(self, upload_id: int) -> int:
    """Queue ``embedding``: embed and calibrate a pair file staff uploaded (``caching.calibration``)."""
    return calibration.calibration_upload_run(upload_id, task_id=self.request.id or "",
                                              attempt=self.request.retries + 1).calibrated_pairs


@shared_task(name="caching.tasks.pair_verify", ignore_result=True, **RETRY_POLICY)
def pair_verify(verification_id: int) -> str:
    """Ask the model server whether a near miss's cached answer would have been right (``caching.verification``)."""
    return verification.pair_verify(verification_id).verdict


# --------------------------------------------------------------------------- purges and clean-up (issue 5)
# Queued on commit by caching.receivers; the retry policy is shared (core.retry).


@shared_task(name="caching.tasks.purge_article", ignore_result=True, **RETRY_POLICY)
def purge_article(article_pk: int, version: int | None = None, trigger: str = "manual") -> int:
    """Queue ``purge``: remove every cached entry citing the article from all layers (seconds after a save)."""
    return purge.purge_citing(article_pk, version, trigger).pk


@shared_task(name="caching.tasks.purge_retrieving", ignore_result=True, **RETRY_POLICY)
def purge_retrieving(article_pks: list[int], trigger: str = "retrieval") -> int:
    """Queue ``purge``: after a re-index, remove cached answers whose question now retrieves a new or changed article."""
    return len(purge.purge_retrieving(article_pks, trigger))


@shared_task(name="caching.tasks.purge_sweep", bind=True, ignore_result=True, **RETRY_POLICY)
def purge_sweep(self) -> int | None:
    """Nightly: purge entries citing versions that are no longer current (events a worker missed)."""
    try:
        return purge.purge_sweep(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(name="caching.tasks.semantic_expired_cleanup", bind=True, ignore_result=True, **RETRY_POLICY)
def semantic_expired_cleanup(self) -> int | None:
    """Nightly: retire expired semantic entries, delete long-dead ones."""
    try:
        return purge.semantic_expired_cleanup(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(name="caching.tasks.semantic_tenant_indexes", bind=True, ignore_result=True, **RETRY_POLICY)
def semantic_tenant_indexes(self) -> int | None:
    """Hourly: one HNSW index per tenant with SEMANTIC_TENANT_INDEX_MIN_ROWS active semantic entries."""
    try:
        return tenant_indexes.run_job(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None

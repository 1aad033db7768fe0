"""Celery tasks of model building: one-line wrappers that call a service."""
from __future__ import annotations

from celery import shared_task

from core.locks import LockHeld
from core.retry import RETRY_POLICY
from modelbuild import judge_calibration, services


@shared_task(name="modelbuild.tasks.judge_recalibrate_tenants", ignore_result=True, **RETRY_POLICY)
def judge_recalibrate_tenants() -> int:
    """Nightly: recalibrate the judge threshold of every tenant with enough new staff labels."""
    return len(judge_calibration.judge_recalibrate_all())


@shared_task(name="modelbuild.tasks.judge_build", bind=True, ignore_result=True)
def judge_build(self) -> int | None:
    """Build the served judge unless it is built (queued by ``make run``); the JobRun id, or None when
    another build holds the lock (it is doing this very work; no retry)."""
    try:
        return services.judge_build(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None

"""Celery tasks of model building: one-line wrappers that call a service."""
from __future__ import annotations

from celery import shared_task

from core.retry import RETRY_POLICY
from modelbuild import judge_calibration


@shared_task(name="modelbuild.tasks.judge_recalibrate_tenants", ignore_result=True, **RETRY_POLICY)
def judge_recalibrate_tenants() -> int:
    """Nightly: recalibrate the judge threshold of every tenant with enough new staff labels."""
    return len(judge_calibration.judge_recalibrate_all())

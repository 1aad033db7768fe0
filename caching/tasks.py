"""Celery tasks of the caching app: one-line wrappers that take ids and call a service."""
from __future__ import annotations

from celery import shared_task

from caching import purge
from supportbot.locks import LockHeld
from supportbot.tasks import RETRY_POLICY


@shared_task(ignore_result=True)
def rollup_hourly() -> int:
    """Roll up the decisions of every complete hour since the last roll-up (beat: hourly)."""
    from caching.rollups import rollup_hours

    return rollup_hours()


@shared_task(ignore_result=True, autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3)
def second_opinion(sample_id: int) -> None:
    """Regenerate a sampled semantic hit's answer and flag a disagreement (never served)."""
    from caching.models import SampledHit
    from caching.review import second_opinion as second_opinion_check

    second_opinion_check(SampledHit.objects.select_related("decision__ask__tenant").get(pk=sample_id))


@shared_task(name="caching.tasks.pair_verify", ignore_result=True, **RETRY_POLICY)
def pair_verify(verification_id: int) -> str:
    """Ask the model server whether a near miss's cached answer would have been right (``caching.learning``)."""
    from caching.learning import pair_verify as pair_verify_service

    return pair_verify_service(verification_id).verdict


@shared_task(name="caching.tasks.judge_recalibrate_tenants", ignore_result=True, **RETRY_POLICY)
def judge_recalibrate_tenants() -> int:
    """Nightly: recalibrate the judge threshold of every tenant with enough new staff labels."""
    from caching.judge_calibration import judge_recalibrate_all

    return len(judge_recalibrate_all())


# --------------------------------------------------------------------------- purges and clean-up (issue 5)
# Queued on commit by caching.receivers; the retry policy is shared (supportbot.tasks).


@shared_task(ignore_result=True, **RETRY_POLICY)
def purge_article(article_pk: int, version: int | None = None, trigger: str = "manual") -> int:
    """Queue ``purge``: remove every cached entry citing the article from all layers (seconds after a save)."""
    return purge.purge_citing(article_pk, version, trigger).pk


@shared_task(ignore_result=True, **RETRY_POLICY)
def purge_retrieving(article_pks: list[int], trigger: str = "retrieval") -> int:
    """Queue ``purge``: after a re-index, remove cached answers whose question now retrieves a new or changed article."""
    return len(purge.purge_retrieving(article_pks, trigger))


@shared_task(bind=True, ignore_result=True, **RETRY_POLICY)
def purge_sweep(self) -> int | None:
    """Nightly: purge entries citing versions that are no longer current (events a worker missed)."""
    try:
        return purge.purge_sweep(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(bind=True, ignore_result=True, **RETRY_POLICY)
def semantic_expired_cleanup(self) -> int | None:
    """Nightly: retire expired semantic entries, delete long-dead ones."""
    try:
        return purge.semantic_expired_cleanup(task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None

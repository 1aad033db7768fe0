"""Celery tasks of the Ask app (the retry policy every app's tasks share is ``core.retry``).

Tasks are one-line wrappers: they take ids or plain values, call a service and
return a plain value. Every task is safe to run twice (acks are late, so a task
of a worker that died is delivered again)."""
from __future__ import annotations

from celery import shared_task

from caching.models import SampledHit
from core.retry import RETRY_POLICY
from core.locks import LockHeld
from supportbot import cache_warmup as cache_warmup_service, prefix_probe, prefix_samples, retention, review
from supportbot.answerers.base import answerer_name


@shared_task(name="supportbot.tasks.prefix_cache_scrape", ignore_result=True, **RETRY_POLICY)
def prefix_cache_scrape() -> int:
    """Hourly: one prefix-cache sample per model server."""
    return len(prefix_samples.prefix_cache_samples_record())


@shared_task(name="supportbot.tasks.records_purge", ignore_result=True, **RETRY_POLICY)
def records_purge(days: int | None = None) -> dict:
    """Nightly: delete Ask records past the retention period."""
    return retention.records_purge_older_than(days)


@shared_task(name="supportbot.tasks.sessions_clear", ignore_result=True, **RETRY_POLICY)
def sessions_clear() -> int:
    """Hourly: delete expired sessions (threads and pending questions with them)."""
    return retention.sessions_clear_expired()


# The name it was queued under when it lived in caching (messages in flight still find it).
@shared_task(name="caching.tasks.second_opinion", ignore_result=True, autoretry_for=(ConnectionError,),
             retry_backoff=True, max_retries=3)
def second_opinion(sample_id: int) -> None:
    """Regenerate a sampled semantic hit's answer and flag a disagreement (never served)."""
    review.second_opinion(SampledHit.objects.select_related("decision__ask__tenant").get(pk=sample_id))


@shared_task(name="supportbot.tasks.cache_warmup", bind=True, ignore_result=True, **RETRY_POLICY)
def cache_warmup(self, tenant_ids: list[int] | None = None) -> int | None:
    """Beat (every five minutes): tenants whose model, prompt or policy version changed get their
    most-asked questions answered again, rate-limited (``supportbot.cache_warmup``); one job run."""
    due = tenant_ids if tenant_ids is not None else cache_warmup_service.warmup_due()
    if not due:
        return 0
    try:
        return cache_warmup_service.warmup_run(due, task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(name="supportbot.tasks.prefix_cache_probe", ignore_result=True)
def prefix_cache_probe() -> bool | None:
    """At worker start and hourly: does the model server report cached tokens for a repeated prompt?
    None when no model writes the answers (the extractive answerer): there is no server to check."""
    if answerer_name() != "model":
        return None
    return prefix_probe.prefix_cache_probe()["ok"]

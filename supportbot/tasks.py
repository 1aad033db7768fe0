"""Celery tasks of the Ask app (the retry policy every app's tasks share is ``core.retry``).

Tasks are one-line wrappers: they take ids or plain values, call a service and
return a plain value. Every task is safe to run twice (acks are late, so a task
of a worker that died is delivered again)."""
from __future__ import annotations

from celery import shared_task

from caching.models import SampledHit
from core.retry import RETRY_POLICY
from supportbot import prefix_samples, retention, review


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

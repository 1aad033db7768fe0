"""Celery tasks of the Ask app, and the retry policy every app's tasks share.

Tasks are one-line wrappers: they take ids or plain values, call a service and
return a plain value. Every task is safe to run twice (acks are late, so a task
of a worker that died is delivered again)."""
from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from supportbot.locks import LockLost
from supportbot.redis_client import RedisUnavailable

# Worth another try: a service that blinked (Redis, the database), or a job whose lock lapsed.
TRANSIENT_ERRORS = (*RedisUnavailable, OperationalError, InterfaceError, LockLost)
RETRY_POLICY = {"autoretry_for": TRANSIENT_ERRORS, "retry_backoff": True, "retry_backoff_max": 300,
                "retry_jitter": True, "max_retries": 8}


@shared_task(ignore_result=True, **RETRY_POLICY)
def prefix_cache_scrape() -> int:
    """Hourly: one prefix-cache sample per model server."""
    from supportbot.samples import prefix_cache_samples_record

    return len(prefix_cache_samples_record())


@shared_task(ignore_result=True, **RETRY_POLICY)
def records_purge(days: int | None = None) -> dict:
    """Nightly: delete Ask records past the retention period."""
    from supportbot.retention import records_purge_older_than

    return records_purge_older_than(days)

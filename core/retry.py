"""The retry policy every app's Celery tasks share.

Worth another try: a service that blinked (Redis, the database), or a job whose lock lapsed.
Every task is safe to run twice (acks are late, so a task of a worker that died is delivered again)."""
from __future__ import annotations

from django.db import InterfaceError, OperationalError

from core.locks import LockLost
from core.redis_client import RedisUnavailable

TRANSIENT_ERRORS = (*RedisUnavailable, OperationalError, InterfaceError, LockLost)
RETRY_POLICY = {"autoretry_for": TRANSIENT_ERRORS, "retry_backoff": True, "retry_backoff_max": 300,
                "retry_jitter": True, "max_retries": 8}

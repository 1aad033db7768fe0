"""One Redis connection pool per process, with short timeouts.

Redis holds caches, never the only copy of anything: callers treat
``RedisUnavailable`` as a cache miss and carry on through the slow path.
"""
from __future__ import annotations

import threading
import time

import redis
from django.conf import settings

RedisUnavailable = (redis.ConnectionError, redis.TimeoutError, OSError)

_lock = threading.Lock()
_client: redis.Redis | None = None
_down_until = 0.0
# After a failure, skip Redis for this long so a dead server costs nothing per request.
DOWN_BACKOFF_S = 2.0


def get_redis() -> redis.Redis:
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = redis.Redis.from_url(
                    settings.REDIS_URL,
                    socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                    socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                    health_check_interval=30,
                    retry_on_timeout=False,
                )
    return _client


def redis_available() -> bool:
    """False for a short while after a failure, so callers skip Redis instead of timing out again."""
    return time.monotonic() >= _down_until


def mark_redis_down() -> None:
    global _down_until
    _down_until = time.monotonic() + DOWN_BACKOFF_S


def reset_redis_state() -> None:
    """Forget the cached client and backoff (tests restart Redis on another port)."""
    global _client, _down_until
    with _lock:
        if _client is not None:
            _client.close()
        _client = None
        _down_until = 0.0

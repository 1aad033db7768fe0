"""A Redis client per thread, with short timeouts.

Each thread gets its own single-connection client: a request's commands skip the pool's
checkout (a lock, bookkeeping and a poll of the socket per command, which cost a cache hit
more than the command itself). A forked child makes its own; ``reset_redis_state`` retires
every thread's client (tests restart Redis on another port).

Redis holds caches, never the only copy of anything: callers treat
``RedisUnavailable`` (any Redis error: down, timed out, or an error reply such as
``OOM command not allowed`` from a full server under ``noeviction``) as a cache miss,
report it with ``redis_failed`` and carry on through the slow path.
"""
from __future__ import annotations

import os
import threading
import time
import weakref

import redis
from django.conf import settings

RedisUnavailable = (redis.RedisError, OSError)

_lock = threading.Lock()
_local = threading.local()
_clients: weakref.WeakSet = weakref.WeakSet()  # every thread's client, to retire them all at a reset
_generation = 0  # bumped by a reset: a client of an older generation is replaced on its next use
_down_until = 0.0
# After a failure, skip Redis for this long so a dead server costs nothing per request.
DOWN_BACKOFF_S = 2.0


def get_redis() -> redis.Redis:
    """This thread's client (made on first use in the thread, the process, or after a reset)."""
    client = getattr(_local, "client", None)
    if client is None or _local.pid != os.getpid() or _local.generation != _generation:
        client = redis.Redis.from_url(
            settings.REDIS_URL,
            single_connection_client=True,
            socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
            socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
            health_check_interval=30,
            retry_on_timeout=False,
        )
        _local.client, _local.pid, _local.generation = client, os.getpid(), _generation
        with _lock:
            _clients.add(client)
    return client


def call(*args):
    """One command on this thread's client, straight on its connection: without the client's
    lock and retry wrapper, a third of the cost of the one command of an exact hit (the rate
    limiter's). Like the client, it tries once more on a new connection when the server closed
    this one (a restart, an idle timeout) and never after a timeout; any failure but an error
    reply drops the connection, since a reply left unread would answer the next command."""
    conn = get_redis().connection
    for attempt in (1, 2):
        try:
            conn.send_command(*args)
            return conn.read_response()
        except redis.ResponseError:  # a whole reply was read: the connection is in step
            raise
        except redis.ConnectionError:
            conn.disconnect()
            if attempt == 2:
                raise
        except BaseException:
            conn.disconnect()
            raise


def redis_available() -> bool:
    """False for a short while after a failure, so callers skip Redis instead of timing out again."""
    return time.monotonic() >= _down_until


def mark_redis_down() -> None:
    global _down_until
    _down_until = time.monotonic() + DOWN_BACKOFF_S


def redis_failed(exc: BaseException) -> None:
    """A cache path's Redis call failed: back off when the server is unreachable. An error reply
    (``ResponseError``: out of memory, read-only replica) came from a server that still answers
    reads in microseconds, so the caches keep reading and only that command is lost."""
    if not isinstance(exc, redis.ResponseError):
        mark_redis_down()


def redis_error_text(exc: BaseException) -> str:
    """What a decision records about a Redis failure: the error class, and an error reply's first words."""
    if isinstance(exc, redis.ResponseError):
        return f"redis error: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"
    return f"redis unavailable: {type(exc).__name__}"


def reset_redis_state() -> None:
    """Retire every thread's client and forget the backoff (tests restart Redis on another port)."""
    global _generation, _down_until
    with _lock:
        _generation += 1
        retired = list(_clients)
        _clients.clear()
        _down_until = 0.0
    for client in retired:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - a client of a dead server or another thread: nothing to keep
            pass

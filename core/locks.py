"""A Redis lock so two runs of the same job never overlap, on one host or many.

``SET key token NX PX ttl`` takes the lock; only the holder of the token can
extend or release it (a compare-and-act Lua script), so a run whose lock expired
while it was stuck can never release the lock of the run that took over. The TTL
bounds how long a crashed worker blocks the job; long jobs call ``extend`` as
they make progress.
"""
from __future__ import annotations

import contextlib
import uuid

from django.conf import settings

from core.redis_client import get_redis

_RELEASE = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
end
return 0
"""
_EXTEND = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0
"""


class LockHeld(Exception):
    """Another run holds the lock."""


class LockLost(Exception):
    """The lock expired or was taken over while this run held it."""


def lock_key(name: str) -> str:
    return f"lock:job:{name}"


class RedisLock:
    def __init__(self, name: str, ttl_s: float | None = None):
        self.name = name
        self.key = lock_key(name)
        self.ttl_ms = int((ttl_s if ttl_s is not None else settings.JOBS_LOCK_TTL_S) * 1000)
        self.token = uuid.uuid4().hex
        self.held = False

    def acquire(self) -> bool:
        self.held = bool(get_redis().set(self.key, self.token, nx=True, px=self.ttl_ms))
        return self.held

    def extend(self) -> None:
        """Push the expiry out by a full TTL; raises LockLost if this run no longer holds the lock."""
        if not get_redis().eval(_EXTEND, 1, self.key, self.token, self.ttl_ms):
            self.held = False
            raise LockLost(f"lock {self.key} expired or was taken over")

    def release(self) -> bool:
        """Delete the lock only if it is still ours."""
        released = bool(get_redis().eval(_RELEASE, 1, self.key, self.token))
        self.held = False
        return released


@contextlib.contextmanager
def job_lock(name: str, ttl_s: float | None = None):
    """Hold ``lock:job:{name}`` for the block, or raise LockHeld at once (never wait: the other run
    is doing the same work)."""
    lock = RedisLock(name, ttl_s)
    if not lock.acquire():
        raise LockHeld(f"{name} is already running (lock {lock.key})")
    try:
        yield lock
    finally:
        with contextlib.suppress(Exception):  # an unreachable Redis lets the TTL release it
            lock.release()

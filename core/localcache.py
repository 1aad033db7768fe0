"""Rows every request reads, kept in each process and checked against a revision in Redis.

A cache hit must not pay for database queries a bare view does not make: the tenant row
(with its API keys) and the current versions of the articles an answer cites are read on
every Ask, yet change a few times a day. ``RevisionedCache`` keeps them in the process
under a *revision*, a random token stored in Redis (``rev:{name}:{t:<tenant id>}``; scopes are
tenant ids, and the tenant's hash tag puts the revision on its shard of a Redis Cluster, where
the rate limiter's script reads it along with the tenant's other keys):

* A read fetches the scope's revision (one GET, or a value the caller already fetched in
  the same round trip as other keys) and uses the local copy only while it was loaded
  under that same revision; otherwise it reloads from the database.
* A write ``bump``\\ s the revision: at once (so this process and everyone reading after it
  reload) and again after the commit (a process that reloaded between the bump and the
  commit read the old row; the second bump makes it reload again).
* The revision is read *before* the database, so a bump can never be missed by a load
  that overlaps it. A scope with no revision yet gets one (SET NX) before the load.
* While Redis is unavailable nothing local is trusted: every read goes to the database.
  A bump that failed (Redis down at that moment) is bounded by ``LOCAL_CACHE_MAX_AGE_S``:
  no local copy is older than that.

Revisions are random tokens, not counters, so a Redis that restarted empty (or a revision
that expired) can never hand out a revision a process already holds.
"""
from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings
from django.db import transaction

from core.redis_client import RedisUnavailable, get_redis, redis_available, redis_failed, tenant_tag

log = logging.getLogger(__name__)

V = TypeVar("V")
MISSING = object()
# A revision that expires only makes every process reload once; it keeps made-up scopes from piling up.
REVISION_TTL_S = 86400


class RevisionedCache(Generic[V]):
    """A process-local map ``scope -> value`` whose entries are valid while their Redis revision is."""

    def __init__(self, name: str, max_entries: int = 10_000):
        self.name = name
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[str, float, V]] = {}
        self._lock = threading.Lock()

    def rev_key(self, scope: int) -> str:
        return f"rev:{self.name}:{tenant_tag(scope)}"

    def get(self, scope: Hashable, load: Callable[[], V], *, rev=MISSING) -> V:
        """The value of ``scope``: the local copy if its revision is current, else ``load()``.

        ``rev``: the scope's revision as the caller already read it (``None``: the key is
        absent); without it, this reads it."""
        if rev is MISSING:
            rev = self.revision(scope)
        elif isinstance(rev, bytes):
            rev = rev.decode()
        if rev is None:
            rev = self.revision(scope, create=True)
        if rev is None:  # Redis unavailable: trust nothing local
            return load()
        entry = self._entries.get(scope)
        if entry is not None and entry[0] == rev and time.monotonic() - entry[1] < settings.LOCAL_CACHE_MAX_AGE_S:
            return entry[2]
        value = load()
        if value is None:  # nothing to keep (an unknown tenant): a flood of made-up names fills nothing
            return value
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()  # scopes are tenants: a bound, not an eviction policy
            self._entries[scope] = (rev, time.monotonic(), value)
        return value

    def peek(self, scope: Hashable):
        """This process's copy of ``scope`` as it is, unchecked (``MISSING`` if none): for a caller
        that checks its revision later, with ``get(scope, load, rev=...)``, before relying on it."""
        entry = self._entries.get(scope)
        return entry[2] if entry is not None else MISSING

    def revision(self, scope: Hashable, *, create: bool = False) -> str | None:
        """The scope's current revision; None when it has none or Redis is unavailable.
        ``create``: give a scope without one a new revision first (SET NX)."""
        if not redis_available():
            return None
        key = self.rev_key(scope)
        try:
            r = get_redis()
            if create:
                r.set(key, secrets.token_hex(8), nx=True, ex=REVISION_TTL_S)
            value = r.get(key)
        except RedisUnavailable as exc:
            redis_failed(exc)
            log.warning("%s cache: redis unavailable (%s), reading the database", self.name, type(exc).__name__)
            return None
        return value.decode() if value is not None else None

    def bump(self, scope: Hashable) -> None:
        """``scope`` changed: every process reloads it on its next read (now, and after the commit)."""
        self._bump_now(scope)
        transaction.on_commit(lambda: self._bump_now(scope), robust=True)

    def forget(self, scope: Hashable | None = None) -> None:
        """Drop this process's copy of ``scope`` (of everything with None)."""
        with self._lock:
            if scope is None:
                self._entries.clear()
            else:
                self._entries.pop(scope, None)

    def _bump_now(self, scope: Hashable) -> None:
        self.forget(scope)
        try:
            get_redis().set(self.rev_key(scope), secrets.token_hex(8), ex=REVISION_TTL_S)
        except RedisUnavailable as exc:
            redis_failed(exc)
            log.warning("could not bump %s for %s (%s): other processes reload within %s s", self.name, scope,
                        type(exc).__name__, settings.LOCAL_CACHE_MAX_AGE_S)

"""Per-process caches: one helper, one rule, and the revisioned cache built on it.

**The rule** (``LocalCache``): an entry lives until its TTL ends or its revision changes,
whichever comes first (a cache without a TTL: until its revision changes or it is forgotten).
A cache holds at most ``max_entries``; one more empties it (a bound that keeps made-up keys
from growing the process, not an eviction policy: what is kept is cheap to load again). A
forked process starts with every cache empty (connections, clients and locks do not survive a
fork). Reads take no lock; a store takes the cache's lock; a load runs outside it, so two
threads that miss together may both load (a caller that must build one object, like a model
client, holds its own lock around ``get``). Every per-process cache of the project is one of
these; a pure function's memo is ``functools.lru_cache`` (it never goes stale).

**Rows every request reads** (``RevisionedCache``). A cache hit must not pay for database
queries a bare view does not make: the tenant row (with its API keys) and the current versions
of the articles an answer cites are read on every Ask, yet change a few times a day.
``RevisionedCache`` keeps them in a ``LocalCache`` under a *revision*, a random token stored in
Redis (``rev:{name}:{t:<tenant id>}``; scopes are tenant ids, and the tenant's hash tag puts the
revision on its shard of a Redis Cluster, where the rate limiter's script reads it along with
the tenant's other keys):

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
import os
import secrets
import threading
import time
import weakref
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


_every_cache: weakref.WeakSet[LocalCache] = weakref.WeakSet()


class LocalCache(Generic[V]):
    """A process-local map ``key -> value`` under the module's rule. ``ttl_s``: seconds an entry
    lives (a callable is read at each lookup, so a setting changed at run time applies at once);
    None: no TTL. ``rev``: the revision an entry was stored under; a lookup under another one misses."""

    def __init__(self, name: str, *, ttl_s: float | Callable[[], float] | None = None, max_entries: int = 1024):
        self.name = name
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[object, float, V]] = {}  # key -> (revision, stored at, value)
        self._lock = threading.Lock()
        _every_cache.add(self)

    def lookup(self, key: Hashable, rev=None):
        """The value kept under ``key`` and ``rev`` that has not outlived its TTL, else ``MISSING``."""
        entry = self._entries.get(key)
        if entry is None or entry[0] != rev:
            return MISSING
        ttl = self.ttl_s
        if ttl is not None and time.monotonic() - entry[1] >= (ttl() if callable(ttl) else ttl):
            return MISSING
        return entry[2]

    def peek(self, key: Hashable):
        """The value kept under ``key`` whatever its revision or age (``MISSING`` if none): for a caller
        that checks it before relying on it."""
        entry = self._entries.get(key)
        return entry[2] if entry is not None else MISSING

    def put(self, key: Hashable, value: V, rev=None) -> V:
        with self._lock:
            if len(self._entries) >= self.max_entries and key not in self._entries:
                self._entries.clear()
            self._entries[key] = (rev, time.monotonic(), value)
        return value

    def get(self, key: Hashable, load: Callable[[], V], rev=None) -> V:
        """The value kept under ``key`` and ``rev``, else ``load()``, kept."""
        value = self.lookup(key, rev)
        return self.put(key, load(), rev) if value is MISSING else value

    def forget(self, key: Hashable | None = None) -> None:
        """Drop ``key`` (everything with None): the next lookup loads."""
        with self._lock:
            if key is None:
                self._entries.clear()
            else:
                self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


def forget_every_cache() -> None:
    """Empty every per-process cache of this process: the next lookups load (each test starts so)."""
    for cache in list(_every_cache):
        cache.forget()


def _forget_every_cache_after_fork() -> None:
    for cache in list(_every_cache):
        cache._lock = threading.Lock()  # a lock held by another thread at the fork would never be released
        cache._entries.clear()


os.register_at_fork(after_in_child=_forget_every_cache_after_fork)


class RevisionedCache(Generic[V]):
    """A process-local map ``scope -> value`` whose entries are valid while their Redis revision is."""

    def __init__(self, name: str, max_entries: int = 10_000):
        self.name = name
        # scopes are tenants: a bound, not an eviction policy
        self._copies: LocalCache[V] = LocalCache(name, ttl_s=lambda: settings.LOCAL_CACHE_MAX_AGE_S,
                                                 max_entries=max_entries)

    @property
    def max_entries(self) -> int:
        """How many scopes this process keeps a copy of (its ``LocalCache``'s bound)."""
        return self._copies.max_entries

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
        value = self._copies.lookup(scope, rev)
        if value is not MISSING:
            return value
        value = load()
        if value is None:  # nothing to keep (an unknown tenant): a flood of made-up names fills nothing
            return value
        return self._copies.put(scope, value, rev)

    def peek(self, scope: Hashable):
        """This process's copy of ``scope`` as it is, unchecked (``MISSING`` if none): for a caller
        that checks its revision later, with ``get(scope, load, rev=...)``, before relying on it."""
        return self._copies.peek(scope)

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
        self._copies.forget(scope)

    def _bump_now(self, scope: Hashable) -> None:
        self.forget(scope)
        try:
            get_redis().set(self.rev_key(scope), secrets.token_hex(8), ex=REVISION_TTL_S)
        except RedisUnavailable as exc:
            redis_failed(exc)
            log.warning("could not bump %s for %s (%s): other processes reload within %s s", self.name, scope,
                        type(exc).__name__, settings.LOCAL_CACHE_MAX_AGE_S)

"""Exact answer cache in Redis: key = hash of the complete answer spec."""
from __future__ import annotations

import functools
import json
from collections import Counter
import time
from collections.abc import Iterator

from django.conf import settings

from caching.churn import churn_add
from core import budgets
from caching.citations import article_versions, stale_citations
from caching.keys import AnswerSpec, canonical_json, digest
from caching.layers.base import CachedAnswer
from caching.layers.citing import CitationIndex, sweep_cited
from core.cachelayer import CacheScope, LayerResult, LayerStats
from core.localcache import MISSING, LocalCache
from core.redis_client import (RedisUnavailable, get_redis, mget_spread, redis_available, redis_error_text,
                               redis_failed, tenant_tag)

# Bump when the key layout itself changes. a1: ``ans:a1:<slug>:<hash>``; a2: the tenant's hash tag
# (``{t:<id>}``, Redis Cluster) in place of the slug. Entries of an older version are never read.
KEY_VERSION = "a2"


def exact_key(spec: AnswerSpec) -> str:
    """``ans:<key version>:{t:<tenant id>}:<sha256 of the spec's canonical JSON>``, remembered per
    spec (every hit computes the key of a question asked before, and the JSON is most of its cost)."""
    fields = spec.as_dict()
    # Each field's stand-in in the memo: a string is itself; an int, whose JSON is its digits, and any
    # other value as its canonical JSON (the text the digest reads) are in a 1-tuple, so no string
    # stands for them, and 1, 1.0 and True, or 0.0 and -0.0, stay apart as their JSON does.
    try:
        memo = tuple(v if type(v) is str else (v,) if type(v) is int else (canonical_json(v),)
                     for v in fields.values())
    except (TypeError, ValueError):  # not JSON: the digest says why
        return f"{exact_prefix(spec.tenant_id)}{digest(fields)}"
    key = _exact_keys.lookup(memo)
    if key is MISSING:
        key = _exact_keys.put(memo, f"{exact_prefix(spec.tenant_id)}{digest(fields)}")
    return key


def exact_prefix(tenant_id: int) -> str:
    """What every exact key of the tenant starts with (``exact_prefix(t) + "*"`` finds them all)."""
    return f"ans:{KEY_VERSION}:{tenant_tag(tenant_id)}:"


def exact_legacy_pattern(tenant_slug: str) -> str:
    """The tenant's entries of key version a1 (``ans:a1:<slug>:<hash>``, before the hash tag): never
    read again, but they hold answers and their source request until their TTL ends, so erasure
    still finds them (drop once EXACT_CACHE_TTL_S has passed since every deployment upgraded)."""
    return f"ans:a1:{tenant_slug}:*"  # a slug holds no glob characters (SlugField)


_exact_keys: LocalCache[str] = LocalCache("exact keys", max_entries=4096)  # a spec's key never changes: no TTL


@functools.lru_cache(maxsize=512)
def _entry_fields(raw: bytes) -> dict:
    """An entry's fields, parsed once per distinct value: every hit on an entry reads the same bytes
    (the caller must not change what it gets)."""
    return json.loads(raw)


def _cited_versions(raw: bytes) -> list[tuple[int, int]]:
    return [(int(c["article_pk"]), int(c["version"])) for c in json.loads(raw).get("citations", [])]


citations = CitationIndex("cite:ans")


def _index_key(key: str) -> str:
    """The tenant's index of its entries (a sorted set scored by expiry): ``ans:<v>:{t:<id>}:<hash>``
    is listed under ``ans-idx:<v>:{t:<id>}``, which counts them for the per-tenant cap."""
    return "ans-idx:" + key.split(":", 1)[1].rsplit(":", 1)[0]


# Past the cap, the tenant's entries nearest their expiry go: popped from the index and deleted in
# one step (KEYS: index; ARGV: how many). The entries' keys come from the index; they share its hash
# tag, so on a cluster they are on the index's slot.
_EVICT = """
local evicted = 0
local oldest = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
for i = 1, #oldest, 2 do
  evicted = evicted + redis.call('DEL', oldest[i])
end
return evicted
"""


class ExactLayer:
    name = "exact"

    def read_keys(self, key: str, tenant_id: int) -> tuple[str, str]:
        """What a lookup reads: the entry and its tenant's article-versions revision."""
        return key, article_versions.rev_key(tenant_id)

    def lookup(self, key: str, tenant_id: int, prefetched: dict | None = None) -> LayerResult:
        """The entry under ``key``, served only while its cited articles are current (its tenant's
        article-versions revision comes back in the same round trip). ``prefetched``: the values
        of ``read_keys`` if the caller read them already."""
        started = time.perf_counter()
        result = LayerResult(self.name, "miss", key_version=KEY_VERSION, candidate=key[-16:])
        if not redis_available():
            result.disposition, result.reason = "skipped", "redis unavailable (backing off)"
            return result
        keys = self.read_keys(key, tenant_id)
        try:
            if prefetched is not None and all(k in prefetched for k in keys):
                raw, articles_rev = (prefetched[k] for k in keys)
            else:
                raw, articles_rev = get_redis().mget(*keys)
        except RedisUnavailable as exc:
            redis_failed(exc)
            result.disposition, result.reason = "skipped", redis_error_text(exc)
            return result
        cached = None
        if raw is not None:
            try:
                cached = CachedAnswer(**_entry_fields(raw))
                cached.citations = [dict(c) for c in cached.citations]  # the request's own, as if just parsed
            except (ValueError, TypeError):  # unreadable (corrupt or an older layout): a miss, and gone
                self.delete(key)
                result.reason = "unreadable entry dropped"
        if cached is None:
            result.reason = result.reason or "no entry"
        else:
            stale = stale_citations(tenant_id, cached.citations, rev=articles_rev)
            result.entry_age_s = time.time() - cached.created
            if stale:
                result.reason = "cited article changed: " + ", ".join(f"{c['article_id']} v{c['version']}" for c in stale)
                self.delete(key)
            else:
                result.disposition, result.reason, result.value = "hit", "exact key match", cached
                result.intent = cached.intent
                result.saved_tokens = cached.prompt_tokens + cached.completion_tokens
                result.saved_ms = cached.generation_ms
        result.lookup_ms = (time.perf_counter() - started) * 1000
        return result

    def store(self, key: str, cached: CachedAnswer, tenant_id: int | None = None) -> LayerResult:
        """Write the entry; past ``EXACT_CACHE_MAX_KEYS_PER_TENANT`` the tenant's entries nearest their
        expiry go. Evictions and expiries are counted for the dashboard (``caching.churn``) when the
        tenant is given. A Redis that refuses the write (down, or full under ``noeviction``) gives a
        ``skipped`` decision naming the error, and the answer is served all the same."""
        result = LayerResult(self.name, "stored", key_version=KEY_VERSION, candidate=key[-16:])
        if not redis_available():
            result.disposition, result.reason = "skipped", "redis unavailable (backing off)"
            return result
        ttl = settings.EXACT_CACHE_TTL_S
        index, now = _index_key(key), time.time()
        try:
            # One transaction, refused whole by a full server under noeviction: forget index members
            # whose lifetime ended (the expiries), write the entry, its index member and citations.
            pipe = get_redis().pipeline(transaction=True)
            pipe.zremrangebyscore(index, "-inf", now)
            payload = json.dumps(cached.__dict__)
            pipe.set(key, payload, ex=ttl)
            pipe.zadd(index, {key: now + ttl})
            pipe.expire(index, ttl + 3600)
            for c in cached.citations:
                pipe.sadd(citations.key_for(c["article_pk"], key), key)
                pipe.expire(citations.key_for(c["article_pk"], key), ttl + 3600)
            pipe.zcard(index)
            replies = pipe.execute()
            expired, size = replies[0], replies[-1]
            over = size - settings.EXACT_CACHE_MAX_KEYS_PER_TENANT
            evicted = get_redis().eval(_EVICT, 1, index, over) if over > 0 else 0
            owner = tenant_id if tenant_id is not None else budgets.tenant_of_key(key)
            if owner is not None:  # the tenant's byte budget: its own oldest answers go
                evicted += budgets.charge(get_redis(), "exact", owner, key, len(key) + len(payload), index=index,
                                          ttl_s=ttl)[0]
        except RedisUnavailable as exc:
            redis_failed(exc)
            result.disposition, result.reason = "skipped", redis_error_text(exc)
            return result
        if evicted:
            result.reason = f"stored; {evicted} older entries evicted (tenant cap)"
        if tenant_id is not None:
            churn_add(tenant_id, self.name, expired=expired, evicted=evicted)
        return result

    def tenant_size(self, tenant_id: int) -> int | None:
        """How many unexpired entries the tenant has (its index's count); None without Redis."""
        try:
            return get_redis().zcount(_index_key(exact_prefix(tenant_id)), int(time.time()), "+inf")
        except RedisUnavailable as exc:
            redis_failed(exc)
            return None

    def delete(self, key: str) -> None:
        try:
            pipe = get_redis().pipeline(transaction=False)
            pipe.delete(key)
            pipe.zrem(_index_key(key), key)
            pipe.execute()
        except RedisUnavailable as exc:
            redis_failed(exc)

    def sweep(self, current_versions) -> tuple[int, Counter]:
        """Delete entries citing an article version that is no longer current (the nightly sweep);
        returns the entries examined and, per stale article, how many went."""
        return sweep_cited(citations.pattern(), _cited_versions, current_versions)

    def delete_keys(self, keys: list[str]) -> int:
        """Delete these entries of one tenant (out of its count too; one slot on a cluster); returns
        how many existed. Raises the Redis error (a purge retries)."""
        r, removed = get_redis(), 0
        for i in range(0, len(keys), 500):
            pipe = r.pipeline(transaction=False)
            pipe.delete(*keys[i:i + 500])
            for key in keys[i:i + 500]:
                pipe.zrem(_index_key(key), key)
            removed += pipe.execute()[0]
        return removed

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int:
        """Delete every exact entry citing the article (raises if Redis is down: the caller retries).
        Without the tenant (the article row is gone) every shard is scanned for its reverse index."""
        r = get_redis()
        removed = 0
        for cite in citations.sets(r, article_pk, tenant_id):  # one tenant's entries, index and reverse index: one slot
            keys = list(r.smembers(cite))
            pipe = r.pipeline(transaction=True)
            if keys:
                pipe.delete(*keys)
                pipe.zrem(_index_key(keys[0].decode()), *keys)  # purged, not expired: out of the tenant's count
            pipe.delete(cite)
            removed += pipe.execute()[0] if keys else 0
        return removed

    def entries(self, tenant_id: int, batch: int = 500) -> Iterator[tuple[str, dict | None]]:
        """Every entry of the tenant under the current key version: ``(key, its value)``, the value
        None when it expired meanwhile or does not parse. Raises the Redis error."""
        r = get_redis()
        keys = list(r.scan_iter(match=exact_prefix(tenant_id) + "*", count=1000))
        for i in range(0, len(keys), batch):
            yield from _parsed(keys[i:i + batch], r.mget(keys[i:i + batch]))  # one tenant: one slot

    def keys_ending(self, tenant_id: int, candidate: str) -> list[str]:
        """The tenant's keys (any key version since the hash tag) that end with a decision's
        ``candidate`` (the last 16 characters of the key it looked up). Raises the Redis error."""
        pattern = f"ans:*:{tenant_tag(tenant_id)}:*{candidate}"
        return sorted(k.decode() for k in get_redis().scan_iter(match=pattern, count=1000))

    def purge_scope(self, scope: CacheScope) -> int:
        """The tenant's entries (every key version, with their index and its articles' reverse index),
        or only those whose answer came from one of ``scope.request_ids`` (erasure); returns how many
        went. Entries of key version a1 (``exact_legacy_pattern``, no hash tag, on any shard) are never
        served but still hold answers until their TTL: found by the slug. Raises the Redis error."""
        r = get_redis()
        tag = tenant_tag(scope.tenant_id)
        legacy = list(r.scan_iter(match=exact_legacy_pattern(scope.tenant_slug), count=1000))
        if scope.customer:
            doomed = [key for key, value in self.entries(scope.tenant_id)
                      if value is not None and value.get("source_request") in scope.request_ids]
            removed = 0
            for i in range(0, len(doomed), 500):
                pipe = r.pipeline(transaction=True)  # one tenant: one slot
                pipe.delete(*doomed[i:i + 500])
                pipe.zrem(_index_key(exact_prefix(scope.tenant_id)), *doomed[i:i + 500])
                removed += pipe.execute()[0]
            for i in range(0, len(legacy), 500):
                for key, value in _parsed(legacy[i:i + 500], mget_spread(r, legacy[i:i + 500])):
                    if value is not None and value.get("source_request") in scope.request_ids:
                        removed += r.delete(key)
            return removed
        keys = [*r.scan_iter(match=f"ans:*:{tag}:*", count=1000), *legacy]
        others = [*r.scan_iter(match=f"ans-idx:*:{tag}", count=1000), *r.scan_iter(match=citations.key("*", scope.tenant_id), count=1000),
                  *r.scan_iter(match=f"ans-idx:a1:{scope.tenant_slug}", count=1000)]
        removed = sum(r.delete(*keys[i:i + 500]) for i in range(0, len(keys), 500))  # a cluster client splits a DEL by slot
        for i in range(0, len(others), 500):
            r.delete(*others[i:i + 500])
        return removed

    def stats(self, tenant_id: int) -> LayerStats:
        return LayerStats(self.name, self.tenant_size(tenant_id))


def _parsed(keys, raws) -> Iterator[tuple[str, dict | None]]:
    for key, raw in zip(keys, raws):
        try:
            value = json.loads(raw) if raw is not None else None
        except ValueError:
            value = None
        yield key.decode(), value

"""Exact answer cache in Redis: key = hash of the complete answer spec."""
from __future__ import annotations

import json
import time

from django.conf import settings

from caching.churn import churn_add
from caching.citations import article_versions, stale_citations
from caching.keys import KEY_VERSION, exact_legacy_pattern, exact_prefix
from caching.layers.base import CacheLayer, CachedAnswer, CitationIndex, LayerResult
from supportbot.redis_client import (RedisUnavailable, get_redis, mget_spread, redis_available, redis_error_text,
                                     redis_failed)


citations = CitationIndex("ans")


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


class ExactLayer(CacheLayer):
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
                cached = CachedAnswer(**json.loads(raw))
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
            pipe.set(key, json.dumps(cached.__dict__), ex=ttl)
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

    def forget_sources(self, tenant_id: int, request_ids: set[str], tenant_slug: str = "") -> int:
        """Delete the tenant's entries whose answer came from one of these Asks; returns how many
        went. ``tenant_slug``: also the entries of key version a1 (``exact_legacy_pattern``), which
        are never served but still hold answers until their TTL. Raises the Redis error (erasure aborts)."""
        r = get_redis()
        keys = list(r.scan_iter(match=exact_prefix(tenant_id) + "*", count=1000))
        legacy = list(r.scan_iter(match=exact_legacy_pattern(tenant_slug), count=1000)) if tenant_slug else []
        doomed = []
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for key, raw in zip(chunk, r.mget(chunk)):
                try:
                    source = json.loads(raw).get("source_request") if raw is not None else None
                except ValueError:
                    source = None
                if source in request_ids:
                    doomed.append(key)
        removed = 0
        for i in range(0, len(doomed), 500):
            pipe = r.pipeline(transaction=True)  # one tenant: one slot
            pipe.delete(*doomed[i:i + 500])
            pipe.zrem(_index_key(exact_prefix(tenant_id)), *doomed[i:i + 500])
            removed += pipe.execute()[0]
        for key, raw in zip(legacy, mget_spread(r, legacy)):  # a1 keys carry no hash tag
            try:
                source = json.loads(raw).get("source_request") if raw is not None else None
            except ValueError:
                source = None
            if source in request_ids:
                removed += r.delete(key)
        return removed


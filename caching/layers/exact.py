"""Exact answer cache in Redis: key = hash of the complete answer spec."""
from __future__ import annotations

import json
import time

from django.conf import settings

from caching.citations import article_versions, stale_citations
from caching.keys import KEY_VERSION
from caching.layers.base import CacheLayer, CachedAnswer, LayerResult
from supportbot.redis_client import RedisUnavailable, get_redis, mark_redis_down, redis_available


def _cite_key(article_pk: int) -> str:
    return f"cite:ans:{article_pk}"


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
            mark_redis_down()
            result.disposition, result.reason = "skipped", f"redis unavailable: {type(exc).__name__}"
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

    def store(self, key: str, cached: CachedAnswer) -> LayerResult:
        result = LayerResult(self.name, "stored", key_version=KEY_VERSION, candidate=key[-16:])
        if not redis_available():
            result.disposition, result.reason = "skipped", "redis unavailable (backing off)"
            return result
        ttl = settings.EXACT_CACHE_TTL_S
        try:
            pipe = get_redis().pipeline(transaction=True)
            pipe.set(key, json.dumps(cached.__dict__), ex=ttl)
            for c in cached.citations:
                pipe.sadd(_cite_key(c["article_pk"]), key)
                pipe.expire(_cite_key(c["article_pk"]), ttl + 3600)
            pipe.execute()
        except RedisUnavailable as exc:
            mark_redis_down()
            result.disposition, result.reason = "skipped", f"redis unavailable: {type(exc).__name__}"
        return result

    def delete(self, key: str) -> None:
        try:
            get_redis().delete(key)
        except RedisUnavailable:
            mark_redis_down()

    def purge_article(self, article_pk: int) -> int:
        """Delete every exact entry citing the article (raises if Redis is down: the caller retries)."""
        r = get_redis()
        keys = list(r.smembers(_cite_key(article_pk)))
        removed = 0
        if keys:
            removed = r.delete(*keys)
        r.delete(_cite_key(article_pk))
        return removed

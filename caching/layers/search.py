"""Search-result cache in Redis: the top-k chunks for a normalised query, per tenant,
locale, k and index generation, with a reverse index from article to keys."""
from __future__ import annotations

import hashlib
import json
import time

from django.conf import settings

from caching.keys import digest
from caching.layers.base import CacheLayer, LayerResult
from retrieval.search import SearchHit
from supportbot.redis_client import RedisUnavailable, get_redis, redis_available, redis_error_text, redis_failed


def search_key(normalized_query: str, tenant_id: int, locale: str, k: int, generation_id: int,
               index_version: int = 0) -> str:
    """``srch:<tenant>:<hash of the query>:<hash of everything>``: a tenant's entries of one query
    can be found (and erased) without knowing the locale, k, generation or index version."""
    return f"srch:{int(tenant_id)}:{_query_hash(normalized_query)}:" + digest(
        {"q": normalized_query, "t": tenant_id, "l": locale, "k": k, "g": generation_id, "v": index_version})


def _query_hash(normalized_query: str) -> str:
    return hashlib.sha256(normalized_query.encode("utf-8")).hexdigest()[:32]


def _cite_key(article_pk: int) -> str:
    return f"cite:srch:{article_pk}"


class SearchLayer(CacheLayer):
    name = "retrieval"

    def lookup(self, key: str) -> LayerResult:
        started = time.perf_counter()
        result = LayerResult(self.name, "miss", candidate=key[-16:])
        if not redis_available():
            result.disposition, result.reason = "skipped", "redis unavailable (backing off)"
            return result
        try:
            raw = get_redis().get(key)
        except RedisUnavailable as exc:
            redis_failed(exc)
            result.disposition, result.reason = "skipped", redis_error_text(exc)
            return result
        if raw is not None:
            try:
                result.value = [SearchHit(**h) for h in json.loads(raw)]
                result.disposition, result.reason = "hit", "search results cached"
            except (ValueError, TypeError):  # unreadable (corrupt or an older layout): search again
                result.reason = "unreadable entry"
        result.lookup_ms = (time.perf_counter() - started) * 1000
        return result

    def store(self, key: str, hits: list[SearchHit]) -> str:
        """Cache the results; "" when stored, else why not (Redis down, or full)."""
        if not redis_available():
            return "redis unavailable (backing off)"
        ttl = settings.SEARCH_CACHE_TTL_S
        try:
            pipe = get_redis().pipeline(transaction=True)
            pipe.set(key, json.dumps([h.to_dict() for h in hits]), ex=ttl)
            for pk in {h.article_pk for h in hits}:
                pipe.sadd(_cite_key(pk), key)
                pipe.expire(_cite_key(pk), ttl + 3600)
            pipe.execute()
        except RedisUnavailable as exc:
            redis_failed(exc)
            return redis_error_text(exc)
        return ""

    def purge_article(self, article_pk: int) -> int:
        r = get_redis()
        keys = list(r.smembers(_cite_key(article_pk)))
        removed = r.delete(*keys) if keys else 0
        r.delete(_cite_key(article_pk))
        return removed

    def forget_queries(self, tenant_id: int, normalized_queries) -> int:
        """Delete the tenant's cached results of these queries (every locale, generation and
        version); returns how many went. Raises the Redis error (erasure aborts)."""
        wanted = {_query_hash(q).encode() for q in normalized_queries}
        r = get_redis()
        doomed = [k for k in r.scan_iter(match=f"srch:{int(tenant_id)}:*", count=1000)
                  if k.split(b":")[2] in wanted]
        if not doomed:
            return 0
        pipe = r.pipeline(transaction=False)
        for cite in r.scan_iter(match=_cite_key("*"), count=1000):  # the reverse index names them too
            pipe.srem(cite, *doomed)
        for i in range(0, len(doomed), 500):
            pipe.delete(*doomed[i:i + 500])
        return sum(pipe.execute()[-((len(doomed) + 499) // 500):])

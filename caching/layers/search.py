"""Search-result cache in Redis: the top-k chunks for a normalised query, per tenant,
locale, k, index generation and search method, with a reverse index from article to keys."""
from __future__ import annotations

import json
import time

from django.conf import settings

from caching.keys import digest
from caching.layers.base import CacheLayer, LayerResult
from retrieval.search import SearchHit, search_version
from supportbot.redis_client import RedisUnavailable, get_redis, mark_redis_down, redis_available


def search_key(normalized_query: str, tenant_id: int, locale: str, k: int, generation_id: int,
               index_version: int = 0) -> str:
    """The key of a search's results; ``search_version`` (the search method and its settings) is part
    of it, so results found another way are never read back."""
    return "srch:" + digest({"q": normalized_query, "t": tenant_id, "l": locale, "k": k, "g": generation_id,
                             "v": index_version, "r": search_version()})


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
            mark_redis_down()
            result.disposition, result.reason = "skipped", f"redis unavailable: {type(exc).__name__}"
            return result
        if raw is not None:
            try:
                result.value = [SearchHit(**h) for h in json.loads(raw)]
                result.disposition, result.reason = "hit", "search results cached"
            except (ValueError, TypeError):  # unreadable (corrupt or an older layout): search again
                result.reason = "unreadable entry"
        result.lookup_ms = (time.perf_counter() - started) * 1000
        return result

    def store(self, key: str, hits: list[SearchHit]) -> None:
        if not redis_available():
            return
        ttl = settings.SEARCH_CACHE_TTL_S
        try:
            pipe = get_redis().pipeline(transaction=True)
            pipe.set(key, json.dumps([h.to_dict() for h in hits]), ex=ttl)
            for pk in {h.article_pk for h in hits}:
                pipe.sadd(_cite_key(pk), key)
                pipe.expire(_cite_key(pk), ttl + 3600)
            pipe.execute()
        except RedisUnavailable:
            mark_redis_down()

    def delete(self, key: str) -> int:
        """Forget one search's results (its reverse-index members expire with their sets)."""
        try:
            return get_redis().delete(key)
        except RedisUnavailable:
            mark_redis_down()
            return 0

    def purge_article(self, article_pk: int) -> int:
        r = get_redis()
        keys = list(r.smembers(_cite_key(article_pk)))
        removed = r.delete(*keys) if keys else 0
        r.delete(_cite_key(article_pk))
        return removed

"""Search-result cache in Redis: the top-k chunks for a normalised query, per tenant,
locale, k, index generation and search method, with a reverse index from article to keys."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
import time

from django.conf import settings

from caching.churn import churn_add
from caching.keys import digest
from core import budgets
from caching.layers.citing import CitationIndex, sweep_cited
from core.cachelayer import CacheScope, LayerResult, LayerStats
from core.redis_client import (RedisUnavailable, get_redis, redis_available, redis_error_text, redis_failed,
                               tenant_tag)
from retrieval.search import SearchHit, search_version


def search_key(normalized_query: str, tenant_id: int, locale: str, k: int, generation_id: int,
               index_version: int = 0) -> str:
    """``srch:{t:<tenant>}:<hash of the query>:<hash of everything>``: a tenant's entries of one query
    can be found (and erased) without knowing the locale, k, generation or index version;
    ``search_version`` (the search method and its settings) is part of the hash, so results found
    another way are never read back. The tenant's hash tag keeps its entries and their reverse
    index on one shard of a cluster."""
    return f"{_prefix(tenant_id)}{_query_hash(normalized_query)}:" + digest(
        {"q": normalized_query, "t": tenant_id, "l": locale, "k": k, "g": generation_id, "v": index_version,
        "r": search_version()})


def _query_hash(normalized_query: str) -> str:
    return hashlib.sha256(normalized_query.encode("utf-8")).hexdigest()[:32]


def _cited_versions(raw: bytes) -> list[tuple[int, int]]:
    return list({(int(h["article_pk"]), int(h["version"])) for h in json.loads(raw)})


def _prefix(tenant_id: int) -> str:
    return f"srch:{tenant_tag(tenant_id)}:"


def _legacy_pattern(tenant_id: int) -> str:
    """The tenant's results in the layout before the hash tag (``srch:<id>:...``): never read again
    (no key of that layout is built), erased with the rest until their TTL ends them."""
    return f"srch:{int(tenant_id)}:*"


citations = CitationIndex("cite:srch")


class SearchLayer:
    # The name its decisions are recorded under (CacheDecision.layer, rollups, the metric's ``layer``
    # label): stored data that dashboards and alerts read, so it keeps the word "retrieval".
    name = "retrieval"  # CacheDecision.Layer.SEARCH

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
            payload = json.dumps([h.to_dict() for h in hits])
            pipe.set(key, payload, ex=ttl)
            for pk in {h.article_pk for h in hits}:
                pipe.sadd(citations.key_for(pk, key), key)
                pipe.expire(citations.key_for(pk, key), ttl + 3600)
            pipe.execute()
            owner = budgets.tenant_of_key(key)
            if owner is not None:  # the tenant's byte budget: its own oldest results go
                evicted = budgets.charge(get_redis(), "search", owner, key, len(key) + len(payload), ttl_s=ttl)[0]
                if evicted:
                    churn_add(owner, self.name, evicted=evicted)
        except RedisUnavailable as exc:
            redis_failed(exc)
            return redis_error_text(exc)
        return ""

    def delete(self, key: str) -> int:
        """Forget one search's results (its reverse-index members expire with their sets)."""
        try:
            return get_redis().delete(key)
        except RedisUnavailable as exc:
            redis_failed(exc)
            return 0

    def sweep(self, current_versions) -> tuple[int, Counter]:
        """Delete results holding a passage of an article version that is no longer current (the
        nightly sweep); returns the results examined and, per stale article, how many went."""
        return sweep_cited(citations.pattern(), _cited_versions, current_versions)

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int:
        """Delete every result citing the article; without the tenant (the article row is gone)
        every shard is scanned for its reverse index."""
        r = get_redis()
        removed = 0
        for cite in citations.sets(r, article_pk, tenant_id):  # the results and their reverse index: one slot
            keys = list(r.smembers(cite))
            pipe = r.pipeline(transaction=True)
            if keys:
                pipe.delete(*keys)
            pipe.delete(cite)
            removed += pipe.execute()[0] if keys else 0
        return removed

    def purge_scope(self, scope: CacheScope) -> int:
        """The tenant's cached results (every locale, generation and version) with its articles'
        reverse index, or only the results of ``scope.normalized`` queries (erasure); returns how many
        went. Results of the layout before the hash tag (``_legacy_pattern``, on any shard) go too.
        Raises the Redis error."""
        wanted = None if not scope.customer else {_query_hash(q).encode() for q in scope.normalized}
        r = get_redis()
        tenant_id = scope.tenant_id
        doomed = [k for k in r.scan_iter(match=_prefix(tenant_id) + "*", count=1000)
                  if wanted is None or k.rsplit(b":", 2)[1] in wanted]
        legacy = [k for k in r.scan_iter(match=_legacy_pattern(tenant_id), count=1000)
                  if wanted is None or k.rsplit(b":", 2)[1] in wanted]
        removed = sum(r.delete(*legacy[i:i + 500]) for i in range(0, len(legacy), 500))  # spread: no tag
        cites = list(r.scan_iter(match=citations.key("*", tenant_id), count=1000))
        if not doomed and (wanted is not None or not cites):
            return removed
        pipe = r.pipeline(transaction=True)  # the tenant's results and reverse index: one slot
        if wanted is None:
            for i in range(0, len(cites), 500):
                pipe.delete(*cites[i:i + 500])
        else:
            for cite in cites:  # the reverse index names them too
                pipe.srem(cite, *doomed)
        batches = [doomed[i:i + 500] for i in range(0, len(doomed), 500)]
        for batch in batches:
            pipe.delete(*batch)
        results = pipe.execute()
        return removed + (sum(results[len(results) - len(batches):]) if batches else 0)

    def stats(self, tenant_id: int) -> LayerStats:
        """How many searches of the tenant are cached (a scan: for the dashboard, not the request path)."""
        try:
            return LayerStats(self.name, sum(1 for _ in get_redis().scan_iter(match=_prefix(tenant_id) + "*",
                                                                              count=1000)))
        except RedisUnavailable as exc:
            redis_failed(exc)
            return LayerStats(self.name, None)

"""Exact answer cache in Redis: key = hash of the complete answer spec."""
from __future__ import annotations

import json
from collections import Counter
import time
from collections.abc import Iterator

from django.conf import settings

from caching.churn import churn_add
from caching.citations import article_versions, stale_citations
from caching.keys import AnswerSpec, digest
from caching.layers.base import CachedAnswer
from caching.layers.citing import sweep_cited
from core.cachelayer import CacheScope, LayerResult, LayerStats
from core.models import Tenant
from core.redis_client import RedisUnavailable, get_redis, redis_available, redis_error_text, redis_failed
from ingestion.models import Article

KEY_VERSION = "a1"  # bump when the key layout itself changes


def exact_key(spec: AnswerSpec) -> str:
    """``ans:<key version>:<tenant>:<sha256 of the spec's canonical JSON>``, remembered per spec
    (every hit computes the key of a question asked before, and the JSON is most of its cost)."""
    fields = spec.as_dict()
    try:
        memo = tuple(v if type(v) is str else _frozen(v) for v in fields.values())  # strings stand for themselves
    except TypeError:  # a value the memo cannot tell apart from others: computed each time
        return f"ans:{KEY_VERSION}:{spec.tenant}:{digest(fields)}"
    key = _exact_keys.get(memo)
    if key is None:
        if len(_exact_keys) >= 4096:
            _exact_keys.clear()
        key = _exact_keys[memo] = f"ans:{KEY_VERSION}:{spec.tenant}:{digest(fields)}"
    return key


_exact_keys: dict[tuple, str] = {}


def _frozen(value):
    """A hashable stand-in for a JSON value that equals another only if their JSON is equal:
    typed, so 1, 1.0 and True stay apart, and floats by repr, so 0.0 and -0.0 do too."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return kind, value
    if kind is float:
        return kind, repr(value)
    if kind is list or kind is tuple:
        return list, tuple(_frozen(v) for v in value)
    if kind is dict:
        return dict, tuple(sorted((_frozen(k), _frozen(v)) for k, v in value.items()))
    raise TypeError(f"no stand-in for {kind.__name__}")


def _cited_versions(raw: bytes) -> list[tuple[int, int]]:
    return [(int(c["article_pk"]), int(c["version"])) for c in json.loads(raw).get("citations", [])]


def _cite_key(article_pk: int) -> str:
    return f"cite:ans:{article_pk}"


def _index_key(key: str) -> str:
    """The tenant's index of its entries (a sorted set scored by expiry): ``ans:<v>:<tenant>:<hash>``
    is listed under ``ans-idx:<v>:<tenant>``, which counts them for the per-tenant cap."""
    return "ans-idx:" + key.split(":", 1)[1].rsplit(":", 1)[0]


# Past the cap, the tenant's entries nearest their expiry go: popped from the index and deleted in
# one step (KEYS: index; ARGV: how many). The entries' keys come from the index (one Redis, not a cluster).
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
                pipe.sadd(_cite_key(c["article_pk"]), key)
                pipe.expire(_cite_key(c["article_pk"]), ttl + 3600)
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

    def tenant_size(self, tenant_slug: str) -> int | None:
        """How many unexpired entries the tenant has (its index's count); None without Redis."""
        try:
            return get_redis().zcount(f"ans-idx:{KEY_VERSION}:{tenant_slug}", int(time.time()), "+inf")
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
        return sweep_cited(_cite_key("*"), _cited_versions, current_versions)

    def delete_keys(self, keys: list[str]) -> int:
        """Delete these entries (out of their tenants' counts too); returns how many existed. Raises
        the Redis error (a purge retries)."""
        r, removed = get_redis(), 0
        for i in range(0, len(keys), 500):
            pipe = r.pipeline(transaction=False)
            pipe.delete(*keys[i:i + 500])
            for key in keys[i:i + 500]:
                pipe.zrem(_index_key(key), key)
            removed += pipe.execute()[0]
        return removed

    def purge_article(self, article_pk: int) -> int:
        """Delete every exact entry citing the article (raises if Redis is down: the caller retries)."""
        r = get_redis()
        keys = list(r.smembers(_cite_key(article_pk)))
        removed = 0
        if keys:
            removed = r.delete(*keys)
            pipe = r.pipeline(transaction=False)
            for k in keys:  # purged, not expired: out of the tenant's count
                pipe.zrem(_index_key(k.decode()), k)
            pipe.execute()
        r.delete(_cite_key(article_pk))
        return removed

    def entries(self, tenant_slug: str, batch: int = 500) -> Iterator[tuple[str, dict | None]]:
        """Every entry of the tenant under the current key version: ``(key, its value)``, the value
        None when it expired meanwhile or does not parse. Raises the Redis error."""
        r = get_redis()
        keys = list(r.scan_iter(match=f"ans:{KEY_VERSION}:{tenant_slug}:*", count=1000))
        for i in range(0, len(keys), batch):
            chunk = keys[i:i + batch]
            for key, raw in zip(chunk, r.mget(chunk)):
                try:
                    value = json.loads(raw) if raw is not None else None
                except ValueError:
                    value = None
                yield key.decode(), value

    def keys_ending(self, tenant_slug: str, candidate: str) -> list[str]:
        """The tenant's keys (any key version) that end with a decision's ``candidate`` (the last 16
        characters of the key it looked up). Raises the Redis error."""
        return sorted(k.decode() for k in get_redis().scan_iter(match=f"ans:*:{tenant_slug}:*{candidate}", count=1000))

    def purge_scope(self, scope: CacheScope) -> int:
        """The tenant's entries (every key version, with their index and its articles' reverse index),
        or only those whose answer came from one of ``scope.request_ids`` (erasure); returns how many
        went. Raises the Redis error."""
        r = get_redis()
        if scope.customer:
            doomed = [key for key, value in self.entries(scope.tenant_slug)
                      if value is not None and value.get("source_request") in scope.request_ids]
            removed = 0
            for i in range(0, len(doomed), 500):
                pipe = r.pipeline(transaction=False)
                pipe.delete(*doomed[i:i + 500])
                pipe.zrem(f"ans-idx:{KEY_VERSION}:{scope.tenant_slug}", *doomed[i:i + 500])
                removed += pipe.execute()[0]
            return removed
        keys = list(r.scan_iter(match=f"ans:*:{scope.tenant_slug}:*", count=1000))
        others = [*r.scan_iter(match=f"ans-idx:*:{scope.tenant_slug}", count=1000),
                  *(_cite_key(pk) for pk in Article.objects.filter(tenant_id=scope.tenant_id).values_list("pk", flat=True))]
        removed = sum(r.delete(*keys[i:i + 500]) for i in range(0, len(keys), 500))
        for i in range(0, len(others), 500):
            r.delete(*others[i:i + 500])
        return removed

    def stats(self, tenant_id: int) -> LayerStats:
        slug = Tenant.objects.filter(pk=tenant_id).values_list("slug", flat=True).first()
        return LayerStats(self.name, self.tenant_size(slug) if slug is not None else 0)

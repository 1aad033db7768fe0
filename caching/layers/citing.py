"""The reverse index the Redis layers (exact answers, search results) keep from an article to the
entries citing it, and the nightly sweep over it. Each layer passes its own key prefix: only the
layer spells its keys."""
from __future__ import annotations

from collections import Counter

from core.redis_client import get_redis, key_tag, mget_spread, tenant_tag


class CitationIndex:
    """A Redis layer's reverse index from an article to the entries citing it, one set a tenant:
    ``<prefix>:{t:<tenant>}:<article pk>`` (the layer names the prefix, e.g. its ``cite:`` key). It
    carries the tenant's hash tag, as the entries it lists do, so storing an entry with its
    citations and purging them are commands on one slot of a cluster."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def key(self, article_pk, tenant_id: int) -> str:
        return self._key(article_pk, tenant_tag(tenant_id))

    def key_for(self, article_pk, entry_key: str) -> str:
        """The set of the entry's tenant (read from the entry key's hash tag)."""
        return self._key(article_pk, key_tag(entry_key))

    def pattern(self, article_pk="*") -> str:
        """Every tenant's set of the article (of every article with ``*``), for SCAN."""
        return self._key(article_pk, "{t:*}")

    def sets(self, r, article_pk: int, tenant_id: int | None) -> list[str]:
        """The article's sets: its tenant's, or, with the tenant unknown (the article row is gone),
        every one a SCAN of every shard finds."""
        if tenant_id is not None:
            return [self.key(article_pk, tenant_id)]
        return [k.decode() for k in r.scan_iter(match=self.pattern(article_pk), count=1000)]

    def _key(self, article_pk, tag: str) -> str:
        return f"{self.prefix}:{tag}:{article_pk}"


def sweep_cited(cite_pattern: str, cited_versions, current_versions) -> tuple[int, Counter]:
    """Delete Redis entries whose cited (article, version) pairs are not all current.

    ``cited_versions(raw_value)`` returns the value's [(article_pk, version)];
    ``current_versions(article_pks)`` the current version of each active one. Returns the number
    of entries examined and, per stale article, the entries removed because of it."""
    r = get_redis()
    members_of: dict[bytes, list[bytes]] = {}
    for cite_key in r.scan_iter(match=cite_pattern, count=1000):
        members_of[cite_key] = list(r.smembers(cite_key))
    entry_keys = sorted({k for members in members_of.values() for k in members})
    values: dict[bytes, list[tuple[int, int]] | None] = {}
    for i in range(0, len(entry_keys), 500):
        batch = entry_keys[i:i + 500]
        for key, raw in zip(batch, mget_spread(r, batch)):  # every tenant's: every shard
            values[key] = None if raw is None else cited_versions(raw)
    current = current_versions(pk for cited in values.values() if cited for pk, _ in cited)
    stale_keys, removed_by_article = [], Counter()
    for key, cited in values.items():
        if not cited:
            continue
        stale_articles = {pk for pk, v in cited if current.get(pk) != v}
        if stale_articles:
            stale_keys.append(key)
            removed_by_article.update(stale_articles)
    for i in range(0, len(stale_keys), 500):
        r.delete(*stale_keys[i:i + 500])  # a cluster client splits a DEL by slot
    pipe = r.pipeline(transaction=False)
    gone = set(stale_keys) | {k for k, v in values.items() if v is None}  # stale, or expired by TTL
    for cite_key, members in members_of.items():
        dead = [m for m in members if m in gone]
        if dead:
            pipe.srem(cite_key, *dead)
    pipe.execute()
    return len(values), removed_by_article
